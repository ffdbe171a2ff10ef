//! Unit-type profiles on the wire: how uploads and patches spell a profile's cost table
//! (see [`pathd_engine::profiles`] for the model).

use std::collections::BTreeMap;

use pathd_engine::CostTable;
use serde::Deserialize;

/// A profile's costs as a client writes them: an array (entry `i` is class `i`'s cost;
/// missing classes are walls) or an object from class to cost, a class named by its number
/// (`"87"`) or, for the Moving AI terrain, by its character (`"W"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum ProfileSpec {
    /// `[cost of class 0, cost of class 1, ...]`.
    List(Vec<u32>),
    /// `{"W": 1, "83": 2}`.
    Classes(BTreeMap<String, u32>),
}

impl ProfileSpec {
    /// The cost table, or why not (`what` names the profile in the message).
    pub fn to_table(&self, what: &str) -> Result<CostTable, String> {
        let mut t = [0u8; 256];
        let cost = |c: u32, class: &str| {
            u8::try_from(c).map_err(|_| format!("{what}: class {class} costs {c}, not in 0..=255"))
        };
        match self {
            ProfileSpec::List(costs) => {
                if costs.len() > 256 {
                    return Err(format!(
                        "{what}: {} costs given, there are 256 classes",
                        costs.len()
                    ));
                }
                for (i, &c) in costs.iter().enumerate() {
                    t[i] = cost(c, &i.to_string())?;
                }
            }
            ProfileSpec::Classes(m) => {
                for (k, &c) in m {
                    let class = match (k.parse::<u8>(), k.as_bytes()) {
                        (Ok(n), _) => n,
                        (Err(_), [b]) if b.is_ascii_graphic() => *b,
                        _ => {
                            return Err(format!(
                                "{what}: {k:?} is not a class (0..=255, or one ASCII character)"
                            ));
                        }
                    };
                    t[class as usize] = cost(c, k)?;
                }
            }
        }
        if t[0] != 0 {
            return Err(format!(
                "{what}: class 0 is a wall for every profile; its cost must be 0"
            ));
        }
        Ok(t)
    }
}

/// Parses a map of profile specs (`None` values: removals, where `allow_removal`).
pub fn tables(
    specs: &BTreeMap<String, Option<ProfileSpec>>,
) -> Result<BTreeMap<String, Option<CostTable>>, String> {
    specs
        .iter()
        .map(|(name, spec)| {
            if !pathd_engine::profiles::valid_profile_name(name) {
                return Err(format!(
                    "profile name {name:?} is invalid: 1..=32 characters of A-Z, a-z, 0-9, _ and -"
                ));
            }
            let t = spec
                .as_ref()
                .map(|s| s.to_table(&format!("profiles.{name}")))
                .transpose()?;
            Ok((name.clone(), t))
        })
        .collect()
}
