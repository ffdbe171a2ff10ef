//! Request JSON read the way `openapi.yaml` describes it.
//!
//! Two rules that serde's own reading of JSON does not follow, applied to every request
//! body by wrapping the deserializer ([`Contract`]), so no DTO field needs an attribute:
//!
//! - **A number with a zero fraction is an integer.** JSON Schema's `type: integer` is the
//!   mathematical one: `14535332.0` and `1e3` are integers, and clients in languages whose
//!   numbers are all doubles (JavaScript, a C# `double`, Python's `json` after arithmetic)
//!   write them so. serde refuses a float where it reads an integer; here a finite float
//!   with no fraction is handed on as the integer it is (a fraction, or a value too large
//!   for 64 bits, is still refused by the field that reads it).
//! - **`null` is not a value of an optional field.** The contract's optional fields are
//!   absent or of their type; `"size": null` is refused (`400 invalid_request`, naming the
//!   field) rather than read as "absent", so the server accepts exactly what the contract
//!   does. The one place where `null` means something (a patch's `profiles` entry: remove
//!   that profile) reads it with [`Removal`].

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// A deserializer that reads as the contract says (see the module docs).
pub struct Contract<D>(pub D);

/// The visitor side of [`Contract`]: hands integral floats on as integers and wraps what
/// it is handed (nested values are read by the same rules).
struct Wrap<V> {
    inner: V,
    /// True under `deserialize_option`: `null` is refused.
    optional: bool,
}

impl<V> Wrap<V> {
    fn new(inner: V) -> Self {
        Wrap {
            inner,
            optional: false,
        }
    }
}

/// The message for a `null` where the contract has no `null`.
pub use crate::saturating::NULL;

macro_rules! forward {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap::new(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Contract<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_option(Wrap {
            inner: visitor,
            optional: true,
        })
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap::new(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap::new(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap::new(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Wrap::new(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, Wrap::new(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap::new(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! pass {
    ($($method:ident: $t:ty),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $t) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    pass!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>,
    );

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        // 2^64 and -2^63 are exact doubles; every integral double in between converts
        // exactly.
        const U64_END: f64 = 18_446_744_073_709_551_616.0;
        const I64_MIN: f64 = -9_223_372_036_854_775_808.0;
        if v.fract() == 0.0 {
            if (0.0..U64_END).contains(&v) {
                return self.inner.visit_u64(v as u64);
            }
            if (I64_MIN..0.0).contains(&v) {
                return self.inner.visit_i64(v as i64);
            }
        }
        self.inner.visit_f64(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        if self.optional {
            return Err(E::custom(NULL));
        }
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Contract(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Contract(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(Contract(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Contract(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Contract(data))
    }
}

/// A seed whose value is read by the contract's rules.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Contract(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Contract<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Contract<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Contract<A> {
    type Error = A::Error;
    type Variant = Contract<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (v, rest) = self.0.variant_seed(Seed(seed))?;
        Ok((v, Contract(rest)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Contract<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap::new(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap::new(visitor))
    }
}

/// An optional value where `null` is a value of its own: `Some(None)` for `null` (e.g. a
/// patch's `"profiles": {"boat": null}`, remove that profile), `Some(Some(v))` otherwise.
/// Use with `#[serde(default)]`-less map values; [`Contract`] refuses `null` elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal<T>(pub Option<T>);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Removal<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `deserialize_option` would be refused by `Contract`; reading the value whole sees
        // `null` as a unit instead.
        let value = serde_json::Value::deserialize(d)?;
        if value.is_null() {
            return Ok(Removal(None));
        }
        T::deserialize(value)
            .map(|v| Removal(Some(v)))
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Q {
        start: [u32; 2],
        size: Option<u32>,
        weight: Option<f64>,
        version: Option<u64>,
        #[serde(default)]
        profiles: std::collections::BTreeMap<String, Removal<Vec<u32>>>,
    }

    fn read(text: &str) -> Result<Q, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(Contract(&mut de)).map_err(|e| e.to_string())
    }

    #[test]
    fn integral_floats_are_integers_and_fractions_are_not() {
        let q = read(r#"{"start": [1.0, 2e1], "size": 3.0, "weight": 2.0, "version": 14535332.0}"#)
            .unwrap();
        assert_eq!(q.start, [1, 20]);
        assert_eq!(
            (q.size, q.weight, q.version),
            (Some(3), Some(2.0), Some(14535332))
        );
        let e = read(r#"{"start": [1.5, 2]}"#).unwrap_err();
        assert!(e.starts_with("start[0]"), "{e}");
        assert!(read(r#"{"start": [1, 2], "size": -1.0}"#).is_err());
        assert!(
            read(r#"{"start": [1, 2], "size": 1e10}"#).is_err(),
            "u32 overflow"
        );
        assert_eq!(
            read(r#"{"start": [1, 2], "weight": 1.5}"#).unwrap().weight,
            Some(1.5)
        );
    }

    #[test]
    fn null_is_refused_except_where_it_means_removal() {
        let e = read(r#"{"start": [1, 2], "size": null}"#).unwrap_err();
        assert!(e.starts_with("size: null is not a value here"), "{e}");
        let q = read(r#"{"start": [1, 2], "profiles": {"a": null, "b": [0, 1.0]}}"#).unwrap();
        assert_eq!(q.profiles["a"], Removal(None));
        assert_eq!(q.profiles["b"], Removal(Some(vec![0, 1])));
        assert!(read(r#"{"start": [1, 2], "profiles": {"a": [null]}}"#).is_err());
    }
}
