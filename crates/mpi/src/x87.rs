//! C's `long double` on x86-64: the x87 80-bit format, stored in 16 bytes. Rust has no such
//! type, so the reduction operators on it (and on `long double _Complex`) run on the x87 unit
//! itself, which keeps the full 64-bit mantissa a C program expects.

use std::arch::asm;

/// `inout = in + inout`.
pub(crate) unsafe fn add(inv: *const u8, inout: *mut u8) {
    asm!(
        "fld tbyte ptr [{i}]",
        "fld tbyte ptr [{o}]",
        "faddp st(1), st",
        "fstp tbyte ptr [{o}]",
        i = in(reg) inv, o = in(reg) inout,
        out("st(0)") _, out("st(1)") _,
        options(nostack),
    );
}

/// `inout = in * inout`.
pub(crate) unsafe fn mul(inv: *const u8, inout: *mut u8) {
    asm!(
        "fld tbyte ptr [{i}]",
        "fld tbyte ptr [{o}]",
        "fmulp st(1), st",
        "fstp tbyte ptr [{o}]",
        i = in(reg) inv, o = in(reg) inout,
        out("st(0)") _, out("st(1)") _,
        options(nostack),
    );
}

/// Whether `a > b`.
pub(crate) unsafe fn greater(a: *const u8, b: *const u8) -> bool {
    let gt: u8;
    asm!(
        "fld tbyte ptr [{b}]",
        "fld tbyte ptr [{a}]",
        "fcomip st, st(1)",
        "fstp st(0)",
        "seta {gt}",
        a = in(reg) a, b = in(reg) b, gt = out(reg_byte) gt,
        out("st(0)") _, out("st(1)") _,
        options(nostack),
    );
    gt != 0
}

/// Complex product: `(re, im)` at `inout` becomes `(a + bi)(c + di)` with `(a, b)` at `inv`
/// and `(c, d)` at `inout` (each part 16 bytes).
pub(crate) unsafe fn complex_mul(inv: *const u8, inout: *mut u8) {
    asm!(
        // re = a*c - b*d
        "fld tbyte ptr [{a}]",
        "fld tbyte ptr [{c}]",
        "fmulp st(1), st",
        "fld tbyte ptr [{a} + 16]",
        "fld tbyte ptr [{c} + 16]",
        "fmulp st(1), st",
        "fchs",
        "faddp st(1), st",
        // im = a*d + b*c
        "fld tbyte ptr [{a}]",
        "fld tbyte ptr [{c} + 16]",
        "fmulp st(1), st",
        "fld tbyte ptr [{a} + 16]",
        "fld tbyte ptr [{c}]",
        "fmulp st(1), st",
        "faddp st(1), st",
        "fstp tbyte ptr [{c} + 16]",
        "fstp tbyte ptr [{c}]",
        a = in(reg) inv, c = in(reg) inout,
        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
        options(nostack),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 80-bit images of small integers, made by the x87 itself from i32.
    fn ld(v: i32) -> [u8; 16] {
        let mut out = [0u8; 16];
        // SAFETY: fild/fstp on our own locals.
        unsafe {
            asm!("fild dword ptr [{v}]", "fstp tbyte ptr [{o}]", v = in(reg) &v, o = in(reg) out.as_mut_ptr(),
                 out("st(0)") _, options(nostack));
        }
        out
    }

    #[test]
    fn arithmetic_and_comparison_match_integers() {
        let mut x = ld(5);
        // SAFETY: 16-byte slots holding 80-bit values.
        unsafe {
            add(ld(7).as_ptr(), x.as_mut_ptr());
            assert_eq!(x, ld(12));
            mul(ld(-3).as_ptr(), x.as_mut_ptr());
            assert_eq!(x, ld(-36));
            assert!(greater(ld(2).as_ptr(), ld(1).as_ptr()));
            assert!(!greater(ld(1).as_ptr(), ld(1).as_ptr()));
            // (1 + 2i)(3 + 4i) = -5 + 10i
            let a = [ld(1), ld(2)].concat();
            let mut c = [ld(3), ld(4)].concat();
            complex_mul(a.as_ptr(), c.as_mut_ptr());
            assert_eq!(c, [ld(-5), ld(10)].concat());
        }
    }
}
