//! Non-negative integers of any size read as a `u64` that saturates, for request fields the
//! server only compares or caps. Below the edge: multi-agent plan requests (`crate::plans`,
//! also read by `pathd mapf`) use it as the HTTP wire types do.

use serde::Deserialize;

/// The message for a `null` where a request takes none (also the edge's strict reader's).
pub const NULL: &str = "null is not a value here: leave the field out for its default";

/// A non-negative integer of any size, read as a `u64` that saturates: `u64::MAX` for one
/// past it. For the fields the server only compares or caps (`min_version`, `if_version`,
/// `max_expansions`, `timeout_ms`): the contract sets them no maximum, and a version past
/// every one there can be is still just newer than the map's (`409 version_conflict`), a
/// budget past the server's still just capped to it. A fraction, a negative number or any
/// other type is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saturating(pub u64);

impl<'de> Deserialize<'de> for Saturating {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SaturatingVisitor { text: false })
    }
}

/// `#[serde(default, deserialize_with = "saturating")]` on an `Option<u64>` of a JSON body.
///
/// `null` is read as an `Option` reads it: refused in a request (the strict request reader at the edge),
/// `None` elsewhere (e.g. a subscription's stored definition, read back by a takeover in
/// `crate::cluster`).
pub fn saturating<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(OptionalSaturating { text: false })
}

/// [`saturating`] for a query parameter (its value is text: decimal digits).
pub fn saturating_param<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(OptionalSaturating { text: true })
}

/// [`SaturatingVisitor`] under an `Option`.
struct OptionalSaturating {
    /// Reads decimal text (query parameters) rather than JSON numbers.
    text: bool,
}

impl<'de> serde::de::Visitor<'de> for OptionalSaturating {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_any(SaturatingVisitor { text: self.text })
            .map(|s| Some(s.0))
    }
}

struct SaturatingVisitor {
    /// Reads decimal text (query parameters) rather than JSON numbers.
    text: bool,
}

impl serde::de::Visitor<'_> for SaturatingVisitor {
    type Value = Saturating;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Saturating, E> {
        Ok(Saturating(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Saturating, E> {
        u64::try_from(v)
            .map(Saturating)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Saturating, E> {
        Ok(Saturating(u64::try_from(v).unwrap_or(u64::MAX)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Saturating, E> {
        // Integral doubles below 2^64 arrive as integers (the strict request reader at the edge); an
        // integral one here is past `u64::MAX`, and so are integer literals serde_json
        // could only read as doubles.
        if v.is_finite() && v.fract() == 0.0 && v >= 0.0 {
            return Ok(Saturating(u64::MAX));
        }
        Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Saturating, E> {
        Err(E::custom(NULL))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Saturating, E> {
        if !self.text || v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(E::invalid_type(serde::de::Unexpected::Str(v), &self));
        }
        Ok(Saturating(v.parse().unwrap_or(u64::MAX)))
    }
}
