//! The process's metrics and their Prometheus text rendering: a `metrics` recorder of our
//! own.
//!
//! pathd needs counters, gauges and fixed-bucket histograms rendered as text, nothing of
//! what a general exporter adds (summaries, idle expiry, push gateways, an HTTP listener),
//! and that exporter with its dependencies was a sixth of a cold release build. Each series
//! is an atomic (counters, gauges) or a small mutex-guarded bucket array (histograms) behind
//! an `Arc`; the `metrics` macros look a series up once per call, by its precomputed key
//! hash.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

/// Bucket upper bounds of histograms whose name ends in `_seconds`: 50 µs to 10 s.
const SECONDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];
/// Bucket upper bounds of the other histograms (counts, such as expansions): powers of ten.
const COUNTS: &[f64] = &[10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];

/// The buckets of a histogram, by its name.
fn buckets_for(name: &str) -> &'static [f64] {
    if name.ends_with("_seconds") {
        SECONDS
    } else {
        COUNTS
    }
}

/// Every series recorded in the process, and the help text of each family.
#[derive(Default)]
pub struct Registry {
    /// Counters by key (name and labels).
    counters: Mutex<HashMap<Key, Arc<AtomicU64>>>,
    /// Gauges by key; the atomic holds the bits of an `f64`.
    gauges: Mutex<HashMap<Key, Arc<AtomicU64>>>,
    /// Histograms by key.
    histograms: Mutex<HashMap<Key, Arc<Buckets>>>,
    /// `# HELP` text by family name.
    help: Mutex<HashMap<String, String>>,
}

/// One histogram series: observations per bucket (not cumulative), their sum and count.
struct Buckets {
    /// Upper bounds, ascending (`+Inf` is implicit).
    bounds: &'static [f64],
    /// Guarded together so a render sees counts, sum and total that agree.
    state: Mutex<BucketState>,
}

/// The mutable part of [`Buckets`].
struct BucketState {
    /// Observations per bound, plus one for above the last bound.
    counts: Vec<u64>,
    /// Sum of the observations.
    sum: f64,
    /// Number of observations.
    count: u64,
}

impl HistogramFn for Buckets {
    fn record(&self, value: f64) {
        let i = self.bounds.partition_point(|&b| b < value);
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.counts[i] += 1;
        s.sum += value;
        s.count += 1;
    }
}

/// Locks a map; a panic elsewhere while it was held leaves it usable (its entries are
/// `Arc`s that are never half-written).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    /// Registers the help text of a family.
    fn describe(&self, name: KeyName, description: SharedString) {
        lock(&self.help).insert(name.as_str().to_owned(), description.into_owned());
    }

    /// Drops every gauge series labelled `label="value"` (a deleted map's per-map gauges:
    /// a gauge that stayed would report memory or lag of a map that is gone).
    pub fn forget_gauges(&self, label: &str, value: &str) {
        lock(&self.gauges)
            .retain(|key, _| !key.labels().any(|l| l.key() == label && l.value() == value));
    }

    /// The process's metrics as Prometheus text (format 0.0.4): families sorted by name,
    /// each with `# HELP` (when described) and `# TYPE`, series sorted by labels.
    pub fn render(&self) -> String {
        let help = lock(&self.help).clone();
        let mut families: Vec<(String, &'static str, Vec<String>)> = Vec::new();
        let counters = lock(&self.counters).clone();
        let gauges = lock(&self.gauges).clone();
        let histograms = lock(&self.histograms).clone();
        for (kind, lines) in [
            (
                "counter",
                series(&counters, |v| v.load(Ordering::Relaxed).to_string()),
            ),
            (
                "gauge",
                series(&gauges, |v| {
                    number(f64::from_bits(v.load(Ordering::Relaxed)))
                }),
            ),
        ] {
            for (name, samples) in lines {
                let samples = samples
                    .into_iter()
                    .map(|(labels, value)| format!("{name}{} {value}", braces(&labels)))
                    .collect();
                families.push((name, kind, samples));
            }
        }
        for (name, all) in group(&histograms) {
            let mut samples = Vec::new();
            for (labels, h) in all {
                let s = lock(&h.state);
                let mut cumulative = 0;
                let bounds = h.bounds.iter().map(|&b| number(b)).chain(["+Inf".into()]);
                for (le, n) in bounds.zip(&s.counts) {
                    cumulative += n;
                    let mut with_le = labels.clone();
                    with_le.push(("le".into(), le));
                    samples.push(format!("{name}_bucket{} {cumulative}", braces(&with_le)));
                }
                samples.push(format!("{name}_sum{} {}", braces(&labels), number(s.sum)));
                samples.push(format!("{name}_count{} {}", braces(&labels), s.count));
            }
            families.push((name, "histogram", samples));
        }
        families.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::new();
        for (name, kind, samples) in families {
            if let Some(text) = help.get(&name) {
                let _ = writeln!(out, "# HELP {name} {}", escape_help(text));
            }
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for s in samples {
                out.push_str(&s);
                out.push('\n');
            }
        }
        out
    }
}

/// Labels as `(name, value)` pairs.
type Labels = Vec<(String, String)>;

/// Series grouped by family name, both sorted.
fn group<T: Clone>(map: &HashMap<Key, T>) -> Vec<(String, Vec<(Labels, T)>)> {
    let mut by_name: HashMap<String, Vec<(Labels, T)>> = HashMap::new();
    for (key, v) in map {
        let labels = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        by_name
            .entry(key.name().to_owned())
            .or_default()
            .push((labels, v.clone()));
    }
    let mut out: Vec<_> = by_name.into_iter().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, series) in &mut out {
        series.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}

/// Each family's series with their rendered values.
fn series<T: Clone>(
    map: &HashMap<Key, T>,
    value: impl Fn(&T) -> String,
) -> Vec<(String, Vec<(Labels, String)>)> {
    group(map)
        .into_iter()
        .map(|(name, all)| {
            let samples = all.into_iter().map(|(l, v)| (l, value(&v))).collect();
            (name, samples)
        })
        .collect()
}

/// `{a="x",b="y"}`, or nothing without labels.
fn braces(labels: &Labels) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A label value with `\`, `"` and newlines escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// Help text with `\` and newlines escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', r"\\").replace('\n', r"\n")
}

/// A sample value: Prometheus spells the infinities `+Inf`/`-Inf` and not-a-number `NaN`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}

/// The recorder installed as the process's global one: every call goes to the static
/// registry, which `/metrics` renders.
pub struct Global(pub &'static Registry);

impl Recorder for Global {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.0.describe(key, description);
    }

    fn describe_gauge(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.0.describe(key, description);
    }

    fn describe_histogram(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.0.describe(key, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(series_of(&self.0.counters, key, Arc::default))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(series_of(&self.0.gauges, key, || {
            Arc::new(AtomicU64::new(0f64.to_bits()))
        }))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(series_of(&self.0.histograms, key, || {
            let bounds = buckets_for(key.name());
            Arc::new(Buckets {
                bounds,
                state: Mutex::new(BucketState {
                    counts: vec![0; bounds.len() + 1],
                    sum: 0.0,
                    count: 0,
                }),
            })
        }))
    }
}

/// The series of `key` in `map`, made by `new` the first time. The key is cloned only then:
/// the `metrics` macros look a series up on every call.
fn series_of<T>(
    map: &Mutex<HashMap<Key, Arc<T>>>,
    key: &Key,
    new: impl FnOnce() -> Arc<T>,
) -> Arc<T> {
    let mut map = lock(map);
    if let Some(v) = map.get(key) {
        return v.clone();
    }
    map.entry(key.clone()).or_insert_with(new).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry of its own (not the process's), with a few series of each kind.
    fn sample() -> (&'static Registry, Global) {
        let r: &'static Registry = Box::leak(Box::default());
        (r, Global(r))
    }

    #[test]
    fn renders_help_type_and_values_sorted() {
        let (r, rec) = sample();
        metrics::with_local_recorder(&rec, || {
            metrics::describe_counter!("t_requests_total", "Requests\nanswered");
            metrics::describe_gauge!("t_busy", "Busy workers");
            metrics::counter!("t_requests_total", "route" => "/b", "status" => "200").increment(2);
            metrics::counter!("t_requests_total", "route" => "/a\"x\\", "status" => "404")
                .increment(1);
            metrics::counter!("t_requests_total", "route" => "/b", "status" => "200").increment(3);
            metrics::gauge!("t_busy").set(1.5);
            metrics::gauge!("t_busy").increment(1.0);
            metrics::gauge!("t_inf").set(f64::INFINITY);
        });
        assert_eq!(
            r.render(),
            "# TYPE t_busy gauge\n\
             t_busy 2.5\n\
             # TYPE t_inf gauge\n\
             t_inf +Inf\n\
             # HELP t_requests_total Requests\\nanswered\n\
             # TYPE t_requests_total counter\n\
             t_requests_total{route=\"/a\\\"x\\\\\",status=\"404\"} 1\n\
             t_requests_total{route=\"/b\",status=\"200\"} 5\n"
                .replace("# TYPE t_busy", "# HELP t_busy Busy workers\n# TYPE t_busy")
        );
    }

    #[test]
    fn forgetting_a_label_drops_only_its_gauges() {
        let (r, rec) = sample();
        metrics::with_local_recorder(&rec, || {
            metrics::gauge!("t_bytes", "map" => "a").set(1.0);
            metrics::gauge!("t_bytes", "map" => "b").set(2.0);
            metrics::gauge!("t_lag", "map" => "a").set(3.0);
            metrics::counter!("t_total", "map" => "a").increment(1);
        });
        r.forget_gauges("map", "a");
        assert_eq!(
            r.render(),
            "# TYPE t_bytes gauge\n\
             t_bytes{map=\"b\"} 2\n\
             # TYPE t_total counter\n\
             t_total{map=\"a\"} 1\n"
        );
    }

    #[test]
    fn histograms_have_cumulative_buckets_sum_and_count() {
        let (r, rec) = sample();
        metrics::with_local_recorder(&rec, || {
            for v in [0.000_01, 0.003, 0.003, 7.0, 60.0] {
                metrics::histogram!("t_wait_seconds", "map" => "m").record(v);
            }
            metrics::histogram!("t_expansions").record(100.0);
            metrics::histogram!("t_expansions").record(1e9);
        });
        let text = r.render();
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in {text}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(line("t_wait_seconds_bucket{map=\"m\",le=\"0.00005\"}"), "1");
        assert_eq!(line("t_wait_seconds_bucket{map=\"m\",le=\"0.0025\"}"), "1");
        assert_eq!(line("t_wait_seconds_bucket{map=\"m\",le=\"0.005\"}"), "3");
        assert_eq!(line("t_wait_seconds_bucket{map=\"m\",le=\"10\"}"), "4");
        assert_eq!(line("t_wait_seconds_bucket{map=\"m\",le=\"+Inf\"}"), "5");
        assert_eq!(line("t_wait_seconds_count{map=\"m\"}"), "5");
        assert_eq!(
            line("t_wait_seconds_sum{map=\"m\"}"),
            number(0.0 + 0.000_01 + 0.003 + 0.003 + 7.0 + 60.0)
        );
        // A value on a bound counts in that bound's bucket (`le` is "less or equal").
        assert_eq!(line("t_expansions_bucket{le=\"100\"}"), "1");
        assert_eq!(line("t_expansions_bucket{le=\"100000000\"}"), "1");
        assert_eq!(line("t_expansions_bucket{le=\"+Inf\"}"), "2");
        assert!(text.contains("# TYPE t_expansions histogram\n"), "{text}");
        // Every bucket line of a series is in ascending `le` order and never decreases.
        let counts: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("t_wait_seconds_bucket"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(counts.len(), SECONDS.len() + 1);
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    }
}
