//! Turning an uploaded body into a [`Grid`]: a Moving AI text file or one of the two JSON
//! forms. Runs on the search pool (parsing and component labelling are O(cells)).

use axum::http::{HeaderMap, StatusCode, header};
use pathd_engine::{Grid, MAX_DIM, Movement, movingai};

use crate::dto::MapUpload;
use crate::error::{ApiError, ErrorCode};

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
            let grid =
                movingai::parse_map(text).map_err(|e| ApiError::invalid_map(e.to_string()))?;
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
            let up: MapUpload = serde_json::from_slice(body)
                .map_err(|e| ApiError::invalid_request(format!("invalid JSON body: {e}")))?;
            let m = match up.movement.as_deref() {
                Some(name) => movement(name)?,
                None => param.unwrap_or(Movement::Octile),
            };
            from_json(up, m, max_cells)
        }
    }
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
    let costs = match (up.costs, up.rows) {
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
                    costs.push(movingai::terrain_cost(c).ok_or_else(|| {
                        ApiError::invalid_map(format!(
                            "rows[{y}][{x}]: unknown terrain character {:?}",
                            c as char
                        ))
                    })?);
                }
            }
            costs
        }
        _ => {
            return Err(ApiError::invalid_map(
                "give exactly one of `costs` and `rows`",
            ));
        }
    };
    Grid::from_costs(up.width, up.height, costs, movement)
        .map_err(|e| ApiError::invalid_map(e.to_string()))
}
