//! Turning an uploaded body into a [`Grid`]: a Moving AI text file or one of the two JSON
//! forms. Runs on the search pool (parsing and component labelling are O(cells)).

use axum::http::{HeaderMap, StatusCode, header};
use std::collections::BTreeMap;
use std::sync::Arc;

use pathd_engine::{Grid, MAX_DIM, Movement, Profiles, movingai};

use crate::profiles::ProfileSpec;

use crate::http::dto::MapUpload;
use crate::http::error::{ApiError, ErrorCode};

/// The body formats `PUT /v1/maps/{name}` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// `text/plain`: a Moving AI `.map` file.
    Text,
    /// `application/json`: `{"width", "height", "costs" | "rows", "movement"?}`.
    Json,
}

/// The body format named by `Content-Type`, or `415`.
pub fn classify(headers: &HeaderMap) -> Result<BodyKind, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "text/plain" => Ok(BodyKind::Text),
        "application/json" => Ok(BodyKind::Json),
        _ => Err(ApiError::unsupported_media_type(format!(
            "Content-Type {ct:?} is not accepted: send `text/plain` (a Moving AI .map file) or \
             `application/json`"
        ))),
    }
}

fn movement(name: &str) -> Result<Movement, ApiError> {
    Movement::parse(name).ok_or_else(|| {
        ApiError::invalid_request(format!(
            "unknown movement {name:?}; expected octile or cardinal"
        ))
    })
}

fn too_large(width: u64, height: u64, max_cells: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::MapTooLarge,
        format!(
            "a {width}x{height} map has {} cells; this server takes at most {max_cells}",
            width * height
        ),
    )
}

/// Builds the grid. `movement_param` is the `?movement=` override; a JSON body's own
/// `movement` field takes precedence over it.
pub fn build_grid(
    kind: BodyKind,
    body: &[u8],
    movement_param: Option<&str>,
    max_cells: u64,
) -> Result<Grid, ApiError> {
    let param = movement_param.map(movement).transpose()?;
    match kind {
        BodyKind::Text => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::invalid_map("the map file is not valid UTF-8 text"))?;
            let grid = movingai::parse_map_terrain(text)
                .map_err(|e| ApiError::invalid_map(e.to_string()))?;
            let (w, h) = (grid.width() as u64, grid.height() as u64);
            if w * h > max_cells {
                return Err(too_large(w, h, max_cells));
            }
            Ok(match param {
                Some(m) if m != grid.movement() => grid.with_movement(m),
                _ => grid,
            })
        }
        BodyKind::Json => {
            let up = read_upload(body)
                .map_err(|e| ApiError::invalid_request(format!("invalid JSON body: {e}")))?;
            let m = match up.movement.as_deref() {
                Some(name) => movement(name)?,
                None => param.unwrap_or(Movement::Octile),
            };
            from_json(up, m, max_cells)
        }
    }
}

/// The JSON body, read as the contract says (see [`crate::http::body::strict`]).
fn read_upload(body: &[u8]) -> Result<MapUpload, serde_json::Error> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(body);
    let up = MapUpload::deserialize(crate::http::body::Contract(&mut de))?;
    de.end()?;
    Ok(up)
}

fn from_json(up: MapUpload, movement: Movement, max_cells: u64) -> Result<Grid, ApiError> {
    let (w, h) = (up.width as u64, up.height as u64);
    if w == 0 || h == 0 || w > MAX_DIM as u64 || h > MAX_DIM as u64 {
        return Err(ApiError::invalid_map(format!(
            "map dimensions {w}x{h} are invalid: width and height must be 1..={MAX_DIM}"
        )));
    }
    if w * h > max_cells {
        return Err(too_large(w, h, max_cells));
    }
    let cells = (w * h) as usize;
    let from_rows = up.rows.is_some();
    let profiles = profile_set(&up, from_rows)?;
    let costs = match (up.costs.or(up.terrain), up.rows) {
        (Some(costs), None) => {
            if costs.len() != cells {
                return Err(ApiError::invalid_map(format!(
                    "expected {cells} costs (width x height), got {}",
                    costs.len()
                )));
            }
            costs
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    u8::try_from(c).map_err(|_| {
                        ApiError::invalid_map(format!("costs[{i}] = {c} is not in 0..=255"))
                    })
                })
                .collect::<Result<Vec<u8>, _>>()?
        }
        (None, Some(rows)) => {
            if rows.len() as u64 != h {
                return Err(ApiError::invalid_map(format!(
                    "expected {h} rows, got {}",
                    rows.len()
                )));
            }
            let mut costs = Vec::with_capacity(cells);
            for (y, row) in rows.iter().enumerate() {
                if row.len() as u64 != w {
                    return Err(ApiError::invalid_map(format!(
                        "rows[{y}] has {} characters, expected {w}",
                        row.len()
                    )));
                }
                for (x, c) in row.bytes().enumerate() {
                    let cost = movingai::terrain_cost(c).ok_or_else(|| {
                        ApiError::invalid_map(format!(
                            "rows[{y}][{x}]: unknown terrain character {:?}",
                            c as char
                        ))
                    })?;
                    // With profiles, each character is its own class.
                    costs.push(if profiles.is_some() { c } else { cost });
                }
            }
            costs
        }
        _ => {
            return Err(ApiError::invalid_map(
                "give exactly one of `costs`, `rows` and `terrain`",
            ));
        }
    };
    // With profiles the cells are terrain classes: a raster, which nobody searches.
    let grid = match profiles {
        Some(p) => Grid::raster(up.width, up.height, costs, movement)
            .map(|g| g.with_profiles(Some(Arc::new(p)))),
        None => Grid::from_costs(up.width, up.height, costs, movement),
    };
    grid.map_err(|e| ApiError::invalid_map(e.to_string()))
}

/// The upload's profile set: none for a plain map; `terrain` needs one; `rows` with
/// profiles join the Moving AI `ground`.
fn profile_set(up: &MapUpload, from_rows: bool) -> Result<Option<Profiles>, ApiError> {
    if up.costs.is_some() && up.terrain.is_some() {
        return Err(ApiError::invalid_map(
            "give exactly one of `costs`, `rows` and `terrain`",
        ));
    }
    let specs = match &up.profiles {
        None if up.terrain.is_some() => {
            return Err(ApiError::invalid_map(
                "`terrain` needs `profiles`: what each class costs each unit type",
            ));
        }
        None if up.default_profile.is_some() => {
            return Err(ApiError::invalid_map("`default_profile` needs `profiles`"));
        }
        None => return Ok(None),
        Some(p) => p,
    };
    let given: BTreeMap<String, Option<ProfileSpec>> = specs
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    let tables = crate::profiles::tables(&given).map_err(ApiError::invalid_map)?;
    let set = if from_rows {
        Profiles::moving_ai().changed(&tables, up.default_profile.as_deref())
    } else {
        let default = match (&up.default_profile, tables.len()) {
            (Some(d), _) => d.clone(),
            (None, 1) => tables.keys().next().expect("one").clone(),
            (None, _) => {
                return Err(ApiError::invalid_map(
                    "name the `default_profile` (the profile of requests that name none)",
                ));
            }
        };
        let tables = tables
            .into_iter()
            .map(|(k, t)| (k, t.expect("uploads add profiles")))
            .collect();
        Profiles::new(default, tables)
    };
    set.map(Some)
        .map_err(|e| ApiError::invalid_map(e.to_string()))
}
