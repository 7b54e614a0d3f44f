//! LEB128 varints, as postcard writes unsigned integers: seven bits a byte, low bits first.

/// Appends `value` to `out`.
pub(crate) fn push(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The value at the start of `bytes`, which then start after it; `None` when they end
/// first or it does not fit in 64 bits.
pub(crate) fn take(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        let bits = u64::from(byte & 0x7f);
        if bits.checked_shl(shift).is_none_or(|shifted| shifted >> shift != bits) {
            return None;
        }
        value |= bits << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// The address a gap (a varint at the start of `bytes`) leads to from `previous`; `None` when
/// the bytes end first or it passes `u32::MAX`.
pub(crate) fn take_gap(bytes: &mut &[u8], previous: u32) -> Option<u32> {
    let next = u64::from(previous).checked_add(take(bytes)?)?;
    u32::try_from(next).ok()
}

/// Bytes `value` takes.
pub(crate) fn len(value: usize) -> usize {
    (usize::BITS - value.leading_zeros()).max(1).div_ceil(7) as usize
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_read_back_as_postcard_writes_them() {
        for value in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            super::push(&mut out, value);
            assert_eq!(out, postcard::to_allocvec(&value).unwrap(), "{value}");
            assert_eq!(out.len(), super::len(value as usize), "{value}");
            let mut at = out.as_slice();
            assert_eq!((super::take(&mut at), at.len()), (Some(value), 0));
        }
        assert_eq!(super::take(&mut &[0x80, 0x80][..]), None, "cut short");
        assert_eq!(super::take(&mut &[0xff; 10][..]), None, "past 64 bits");
    }
}
