//! PMI-1 client (to be written).
