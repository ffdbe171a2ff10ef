//! A small seeded generator for the solver's tie-breaking (the engine has no dependencies).

/// xoshiro-style state seeded by splitmix64: fast, deterministic per seed, not for secrets.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64, u64);

impl Rng {
    /// A generator from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (a, b) = (next(), next());
        Self(a | 1, b)
    }

    /// The next 64 random bits (xorshift128+).
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let (mut s1, s0) = (self.0, self.1);
        self.0 = s0;
        s1 ^= s1 << 23;
        self.1 = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        self.1.wrapping_add(s0)
    }

    /// A number in `0..n` (`n > 0`).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// A number in `[0, 1)`.
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Shuffles `xs` in place (Fisher-Yates).
    pub(crate) fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            xs.swap(i, self.below(i + 1));
        }
    }
}
