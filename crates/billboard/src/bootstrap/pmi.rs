//! PMI-1 client (placeholder until the real client lands: singleton only).

use crate::Result;

pub struct Pmi {
    rank: usize,
    size: usize,
}

impl Pmi {
    pub fn from_env() -> Result<Option<Pmi>> {
        Ok(None)
    }
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn kvsname(&self) -> &str {
        ""
    }
    pub fn put(&mut self, _key: &str, _value: &str) -> Result<()> {
        Ok(())
    }
    pub fn get(&mut self, _key: &str) -> Result<String> {
        Ok(String::new())
    }
    pub fn barrier(&mut self) -> Result<()> {
        Ok(())
    }
    pub fn abort(&mut self, _code: i32, _msg: &str) -> Result<()> {
        Ok(())
    }
    pub fn finalize(&mut self) -> Result<()> {
        Ok(())
    }
}
