//! Unit types on one map: a *terrain class* per cell and named *profiles*, each a cost per
//! class.
//!
//! An RTS has infantry, tanks and boats on the same terrain. Rather than one map per unit
//! type (patched N times for every change, free to disagree), a map holds one class per
//! cell (`0..=255`) and a [`Profiles`] set; each profile's units see the grid whose cell
//! costs are their table's entries for the cells' classes ([`Grid::under_profile`]). One
//! set of cells, one patch stream and one version sequence serve every profile.
//!
//! Class 0 is a wall for every profile (a table's entry 0 must be 0): that keeps the class
//! raster a valid [`Grid`] (its walls are everybody's walls), so the raster is stored,
//! patched and replicated exactly like a plain map, the profiles riding along.
//!
//! Plain maps are the special case of no profile set: the costs are the classes, under the
//! one implicit profile `default` whose cost is the class itself.
//!
//! Moving AI text maps keep each character as its own class, its ASCII code (`.` 46, `@`
//! 64, `G` 71, `O` 79, `S` 83, `T` 84, `W` 87), with the profile `ground` as their default:
//! `.` `G` `S` cost 1, `@` `O` `T` `W` are walls, and every other class costs its own
//! number (so a patch writing cost 1 or 5 or a wall means what it means on a plain map).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::grid::{Grid, Point};
use crate::patch::Patch;

/// A profile: the cost of each terrain class for its units (0 = impassable).
pub type CostTable = [u8; 256];

/// Most profiles a map may hold.
pub const MAX_PROFILES: usize = 16;

/// Longest profile name.
pub const MAX_PROFILE_NAME: usize = 32;

/// The name of a plain map's one implicit profile.
pub const DEFAULT_PROFILE: &str = "default";

/// The Moving AI default profile's name.
pub const GROUND: &str = "ground";

/// The Moving AI characters and their classes (their ASCII codes).
pub const MOVING_AI_CLASSES: [(char, u8); 7] = [
    ('.', b'.'),
    ('@', b'@'),
    ('G', b'G'),
    ('O', b'O'),
    ('S', b'S'),
    ('T', b'T'),
    ('W', b'W'),
];

/// Why a profile set cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileError {
    /// A name is empty, too long, or has characters other than `A-Z a-z 0-9 _ -`.
    BadName(String),
    /// More than [`MAX_PROFILES`] profiles.
    TooMany(usize),
    /// No profiles at all.
    Empty,
    /// The default profile is not among the profiles.
    NoDefault(String),
    /// A change removes the default profile.
    RemovesDefault(String),
    /// A table makes class 0 passable.
    ClassZero(String),
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::BadName(n) => write!(
                f,
                "profile name {n:?} is invalid: 1..={MAX_PROFILE_NAME} characters of A-Z, a-z, 0-9, _ and -"
            ),
            ProfileError::TooMany(n) => {
                write!(f, "{n} profiles: a map holds at most {MAX_PROFILES}")
            }
            ProfileError::Empty => f.write_str("a map with terrain needs at least one profile"),
            ProfileError::NoDefault(n) => {
                write!(
                    f,
                    "the default profile {n:?} is not one of the map's profiles"
                )
            }
            ProfileError::RemovesDefault(n) => write!(
                f,
                "profile {n:?} is the map's default and cannot be removed (name another default first)"
            ),
            ProfileError::ClassZero(n) => write!(
                f,
                "profile {n:?} gives class 0 a cost: class 0 is a wall for every profile"
            ),
        }
    }
}

impl std::error::Error for ProfileError {}

/// True for a valid profile name.
pub fn valid_profile_name(name: &str) -> bool {
    (1..=MAX_PROFILE_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A map's named profiles and which one a request without `profile` gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profiles {
    default: String,
    tables: BTreeMap<String, Box<CostTable>>,
}

/// The identity table: every class costs its own number (a plain map's `default`).
pub fn identity_table() -> CostTable {
    std::array::from_fn(|c| c as u8)
}

impl Profiles {
    /// A profile set; `default` must be one of `tables`.
    pub fn new(
        default: impl Into<String>,
        tables: BTreeMap<String, CostTable>,
    ) -> Result<Self, ProfileError> {
        let default = default.into();
        if tables.is_empty() {
            return Err(ProfileError::Empty);
        }
        if tables.len() > MAX_PROFILES {
            return Err(ProfileError::TooMany(tables.len()));
        }
        for (name, t) in &tables {
            if !valid_profile_name(name) {
                return Err(ProfileError::BadName(name.clone()));
            }
            if t[0] != 0 {
                return Err(ProfileError::ClassZero(name.clone()));
            }
        }
        if !tables.contains_key(&default) {
            return Err(ProfileError::NoDefault(default));
        }
        Ok(Profiles {
            default,
            tables: tables.into_iter().map(|(k, v)| (k, Box::new(v))).collect(),
        })
    }

    /// The Moving AI set: `ground` (see the module docs).
    pub fn moving_ai() -> Self {
        let mut ground = identity_table();
        for (ch, class) in MOVING_AI_CLASSES {
            ground[class as usize] = u8::from(matches!(ch, '.' | 'G' | 'S'));
        }
        Profiles::new(GROUND, BTreeMap::from([(GROUND.to_owned(), ground)]))
            .expect("the Moving AI profile set is valid")
    }

    /// The default profile's name.
    pub fn default_name(&self) -> &str {
        &self.default
    }

    /// The default profile's table.
    pub fn default_table(&self) -> &CostTable {
        &self.tables[&self.default]
    }

    /// A profile's table.
    pub fn get(&self, name: &str) -> Option<&CostTable> {
        self.tables.get(name).map(|t| &**t)
    }

    /// Every profile, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &CostTable)> {
        self.tables.iter().map(|(k, v)| (k.as_str(), &**v))
    }

    /// Number of profiles.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// Never true (a set holds at least one profile).
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// This set with `changes` applied (`None` removes a profile) and, when given, another
    /// default.
    pub fn changed(
        &self,
        changes: &BTreeMap<String, Option<CostTable>>,
        default: Option<&str>,
    ) -> Result<Profiles, ProfileError> {
        let mut tables: BTreeMap<String, CostTable> =
            self.tables.iter().map(|(k, v)| (k.clone(), **v)).collect();
        let default = default.unwrap_or(&self.default).to_owned();
        for (name, t) in changes {
            match t {
                Some(t) => {
                    tables.insert(name.clone(), *t);
                }
                None => {
                    if *name == default {
                        return Err(ProfileError::RemovesDefault(name.clone()));
                    }
                    tables.remove(name);
                }
            }
        }
        Profiles::new(default, tables)
    }
}

impl Grid {
    /// The profile set that reads this grid's costs as terrain classes, if any.
    pub fn profiles(&self) -> Option<&Arc<Profiles>> {
        self.profiles.as_ref()
    }

    /// The same cells read through another profile set (`None`: a plain map again).
    pub fn with_profiles(&self, profiles: Option<Arc<Profiles>>) -> Grid {
        let mut g = self.clone();
        g.profiles = profiles;
        g
    }

    /// The grid a profile's units see: each cell costs `table[class]`, this grid's costs
    /// being the classes. `O(cells)`; the result is a plain grid.
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, profiles::identity_table};
    /// let classes = Grid::from_costs(3, 1, vec![7, 9, 7], Movement::Octile).unwrap();
    /// let mut boat = [0u8; 256];
    /// boat[9] = 2;
    /// let g = classes.under_profile(&boat);
    /// assert_eq!(g.costs(), vec![0, 2, 0]);
    /// assert_eq!(classes.under_profile(&identity_table()).costs(), classes.costs());
    /// ```
    pub fn under_profile(&self, table: &CostTable) -> Grid {
        let costs = self
            .costs()
            .into_iter()
            .map(|c| table[c as usize])
            .collect();
        Grid::from_costs(self.width(), self.height(), costs, self.movement())
            .expect("same dimensions as a valid grid")
    }

    /// The next version of a profile's grid (`self`, the previous one) after the classes
    /// at `changed` became those of `classes`: only the cells whose cost under `table`
    /// moves are written, so a patch that does not touch what this profile sees leaves
    /// it as it is (`None`). Returns the grid and the cells whose cost changed.
    pub fn follow_classes(
        &self,
        classes: &Grid,
        changed: &[Point],
        table: &CostTable,
    ) -> Option<(Grid, Vec<Point>)> {
        let cells = changed
            .iter()
            .map(|&p| (p, table[classes.cost(p) as usize]))
            .filter(|&(p, c)| self.cost(p) != c)
            .collect::<Vec<_>>();
        let patch = Patch {
            cells,
            rects: Vec::new(),
        };
        self.apply_patch(&patch)
            .expect("changed cells lie on the map")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Movement;

    #[test]
    fn moving_ai_ground_is_todays_rule_and_identity_elsewhere() {
        let p = Profiles::moving_ai();
        let t = p.default_table();
        assert_eq!(
            (t[b'.' as usize], t[b'G' as usize], t[b'S' as usize]),
            (1, 1, 1)
        );
        for c in [b'@', b'O', b'T', b'W', 0] {
            assert_eq!(t[c as usize], 0);
        }
        assert_eq!((t[1], t[5], t[200]), (1, 5, 200));
    }

    #[test]
    fn changes_validate_names_defaults_and_class_zero() {
        let p = Profiles::moving_ai();
        let mut boat = [0u8; 256];
        boat[b'W' as usize] = 1;
        let with = p
            .changed(&BTreeMap::from([("boat".into(), Some(boat))]), None)
            .unwrap();
        assert_eq!(with.len(), 2);
        assert_eq!(with.default_name(), GROUND);
        assert_eq!(
            with.changed(&BTreeMap::from([("ground".into(), None)]), None),
            Err(ProfileError::RemovesDefault("ground".into()))
        );
        let moved = with
            .changed(&BTreeMap::from([("ground".into(), None)]), Some("boat"))
            .unwrap();
        assert_eq!(moved.default_name(), "boat");
        let mut bad = boat;
        bad[0] = 1;
        assert_eq!(
            p.changed(&BTreeMap::from([("x".into(), Some(bad))]), None),
            Err(ProfileError::ClassZero("x".into()))
        );
        assert!(matches!(
            p.changed(&BTreeMap::from([("no spaces".into(), Some(boat))]), None),
            Err(ProfileError::BadName(_))
        ));
    }

    #[test]
    fn following_classes_touches_only_what_the_profile_sees() {
        let classes = Grid::from_costs(4, 1, vec![b'.', b'W', b'.', b'T'], Movement::Octile)
            .unwrap()
            .with_profiles(Some(Arc::new(Profiles::moving_ai())));
        let mut boat = [0u8; 256];
        boat[b'W' as usize] = 1;
        let ground = classes.under_profile(Profiles::moving_ai().default_table());
        let water = classes.under_profile(&boat);
        // A tree becomes ground: the ground grid changes, the boat grid does not.
        let p = Patch {
            cells: vec![(Point::new(3, 0), b'.')],
            rects: vec![],
        };
        let (next, changed) = classes.apply_patch(&p).unwrap().unwrap();
        assert!(next.profiles().is_some(), "patches carry the profiles");
        let (g2, c2) = ground
            .follow_classes(&next, &changed, Profiles::moving_ai().default_table())
            .unwrap();
        assert_eq!((g2.costs(), c2), (vec![1, 0, 1, 1], vec![Point::new(3, 0)]));
        assert!(water.follow_classes(&next, &changed, &boat).is_none());
    }
}
