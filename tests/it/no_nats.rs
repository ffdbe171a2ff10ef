//! A binary built without the `nats` feature (the default build): `--store nats://...`
//! still parses, and start fails at once with a message that says how to get NATS.

use crate::common::run_to_exit as run;

#[test]
fn a_nats_store_without_the_feature_fails_at_start_saying_how_to_get_it() {
    let by_flag = run(&["--store", "nats://bob:secret@127.0.0.1:4222"], &[]);
    let by_env = run(&[], &[("PATHD_STORE", "nats://127.0.0.1:4222")]);
    for (code, out) in [by_flag, by_env] {
        assert!(code.is_some_and(|c| c != 0), "exit {code:?}: {out}");
        assert!(
            out.contains("built without the `nats` feature")
                && out.contains("cargo build --release --features nats")
                && out.contains("container image"),
            "{out}"
        );
        assert!(!out.contains("secret"), "credentials leaked: {out}");
        assert!(!out.contains("pathd listening"), "{out}");
    }
    // A malformed URL is still a configuration error, named as such.
    let (code, out) = run(&["--store", "http://127.0.0.1:4222"], &[]);
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}: {out}");
    assert!(out.contains("nats://"), "{out}");
}
