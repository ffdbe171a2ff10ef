//! Secrets compared in constant time (tokens, subscription and plan secrets).

/// Compares without an early exit, so the time taken does not reveal a matching prefix.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}
