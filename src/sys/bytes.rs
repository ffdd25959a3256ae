//! Bounds-checked reads of fixed-size fields from bytes the kernel or a
//! driver handed us (netlink messages, ethtool replies): a field past the
//! end is `None`, never a panic.

/// The `N` bytes at `at`, or `None` when the buffer ends before them.
pub fn field<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_inside_and_past_the_end() {
        let b = [1u8, 2, 3, 4, 5];
        assert_eq!(field::<4>(&b, 1), Some([2, 3, 4, 5]));
        assert_eq!(field::<4>(&b, 2), None);
        assert_eq!(field::<2>(&b, usize::MAX), None);
    }
}
