use super::*;
use std::time::Duration;

#[tokio::test]
async fn answers_and_refuses_when_full() {
    let c = Compute::new(1, 0);
    assert_eq!(c.run(|_| 2 + 2).await.unwrap(), 4);
    let hold = c.hold(1).await.unwrap();
    let e = c.run(|_| ()).await.unwrap_err();
    assert_eq!(e, PoolError::Overloaded);
    assert_eq!(c.stats().rejected, 1);
    drop(hold);
    // The held worker frees its permit as soon as it sees the release.
    let mut tries = 0;
    while c.run(|_| ()).await.is_err() {
        tries += 1;
        assert!(tries < 10_000, "pool never freed");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn dropping_the_future_sets_the_cancel_flag() {
    let c = Compute::new(1, 1);
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    let (started_tx, started_rx) = oneshot::channel();
    let c2 = c.clone();
    let fut = async move {
        c2.run(move |cancel| {
            let _ = started_tx.send(());
            while !cancel.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
            seen_tx.send(true).unwrap();
        })
        .await
    };
    let task = tokio::spawn(fut);
    started_rx.await.unwrap();
    task.abort();
    let seen = tokio::task::spawn_blocking(move || seen_rx.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(seen, Ok(true));
}

/// Jobs reuse idle searchers (at most one per concurrently running job), and a job that
/// panics with a searcher out does not hand it back.
#[tokio::test]
async fn searchers_are_checked_out_reused_and_dropped_on_panic() {
    let c = Compute::new(2, 4);
    let grid =
        pathd_engine::Grid::from_costs(4, 1, vec![1; 4], pathd_engine::Movement::Octile).unwrap();
    let idle = |c: &Compute| c.inner.shared.searchers.0.lock().unwrap().len();
    let q = pathd_engine::Query::new(
        pathd_engine::Point::new(0, 0),
        pathd_engine::Point::new(3, 0),
    );
    for _ in 0..20 {
        let (c2, g, q) = (c.clone(), grid.clone(), q.clone());
        let cost = c
            .run(move |_| c2.searcher().find_path(&g, &q).unwrap().cost)
            .await
            .unwrap();
        assert_eq!(cost, 3.0);
    }
    assert_eq!(idle(&c), 1, "sequential jobs share one searcher");
    {
        let (a, b) = (c.searcher(), c.searcher());
        assert_eq!(idle(&c), 0);
        drop((a, b));
    }
    assert_eq!(idle(&c), 2);
    let c2 = c.clone();
    let e = c
        .run(move |_| {
            let _s = c2.searcher();
            panic!("boom")
        })
        .await
        .unwrap_err();
    assert_eq!(e, PoolError::Panicked("boom".into()), "the detail is kept");
    assert_eq!(idle(&c), 1, "the panicking job's searcher is dropped");
}

#[tokio::test]
async fn batches_keep_input_order_and_survive_panics() {
    let c = Compute::new(2, 4);
    let out = c
        .run_batch((0..100).collect(), |i: u32, _| i * 2)
        .await
        .unwrap();
    assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
    let e = c.run(|_| -> u32 { panic!("boom") }).await.unwrap_err();
    assert_eq!(e, PoolError::Panicked("boom".into()));
    assert_eq!(
        c.run(|_| 7).await.unwrap(),
        7,
        "a panic must not kill the worker"
    );
}

/// Answers come back in input order with per-item errors in place, whatever the chunk
/// size (uneven last chunks included) and however the workers interleave the chunks.
#[tokio::test]
async fn chunked_batches_keep_input_order_with_errors_in_place() {
    let c = Compute::new(2, 4);
    for chunk in [1, 3, 7, 16, 100, 1000] {
        let out = c
            .run_chunked((0..100).collect(), chunk, |i: u32, _, _| {
                if i % 5 == 3 {
                    Err(format!("bad {i}"))
                } else {
                    Ok(i * 2)
                }
            })
            .await
            .unwrap();
        let want: Vec<Result<u32, String>> = (0..100)
            .map(|i| {
                if i % 5 == 3 {
                    Err(format!("bad {i}"))
                } else {
                    Ok(i * 2)
                }
            })
            .collect();
        assert_eq!(out, want, "chunk {chunk}");
    }
    // The batch's permit is freed once it answered: the pool takes 6 requests again.
    let hold = c.hold(2).await.unwrap();
    drop(hold);
    let e = c
        .run_chunked(vec![0u8], 4, |_, _, _| -> u8 { panic!("chunk boom") })
        .await
        .unwrap_err();
    assert_eq!(e, PoolError::Panicked("chunk boom".into()));
    assert_eq!(
        c.run(|_| 7).await.unwrap(),
        7,
        "a panic must not kill the worker"
    );
}

/// A chunk hands one searcher to all its items (so a chunk of 50 on one worker checks
/// out one).
#[tokio::test]
async fn a_chunk_reuses_one_searcher() {
    let c = Compute::new(1, 4);
    let out = c
        .run_chunked((0..50).collect(), 50, |_: u32, _, s| {
            s as *const Searcher as usize
        })
        .await
        .unwrap();
    assert!(
        out.iter().all(|&p| p == out[0]),
        "one searcher for the chunk"
    );
    assert_eq!(c.inner.shared.searchers.0.lock().unwrap().len(), 1);
}

/// Fairness: with one worker, a single query queued while a one-chunk batch of 40 runs
/// is answered after the batch's current item, not after the rest of the chunk; the
/// batch then finishes, in order.
#[tokio::test]
async fn a_chunk_gives_way_to_a_single_query() {
    let c = Compute::new(1, 4);
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let started = Mutex::new(Some(started_tx));
    let gate = Mutex::new(gate_rx);
    let batch = {
        let (c, log) = (c.clone(), Arc::clone(&log));
        tokio::spawn(async move {
            c.run_chunked((0..40).collect(), 40, move |i: u32, _, _| {
                if i == 0 {
                    if let Some(tx) = started.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(30));
                }
                log.lock().unwrap().push(format!("batch {i}"));
                i
            })
            .await
        })
    };
    started_rx.await.unwrap();
    let single = {
        let (c, log) = (c.clone(), Arc::clone(&log));
        tokio::spawn(async move {
            c.run(move |_| log.lock().unwrap().push("single".into()))
                .await
        })
    };
    let mut tries = 0;
    while c.inner.shared.singles_waiting.load(Ordering::Relaxed) == 0 {
        tries += 1;
        assert!(tries < 30_000, "the single query was never queued");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    gate_tx.send(()).unwrap();
    single.await.unwrap().unwrap();
    let out = batch.await.unwrap().unwrap();
    assert_eq!(out, (0..40).collect::<Vec<_>>(), "answers in order");
    let log = log.lock().unwrap();
    let pos = log.iter().position(|e| e == "single").unwrap();
    assert_eq!(
        pos,
        1,
        "the single query ran after {pos} batch items: {:?}",
        &log[..pos]
    );
    assert_eq!(log.len(), 41, "every item ran once");
}

/// Between two batches a chunk runs to its size (no yield to other batches), and a
/// batch of several chunks interleaves with another a chunk at a time.
#[tokio::test]
async fn batches_share_the_worker_a_chunk_at_a_time() {
    let c = Compute::new(1, 4);
    let hold = c.hold(1).await.unwrap();
    let log = Arc::new(Mutex::new(Vec::<(char, u32)>::new()));
    let spawn = |name: char| {
        let (c, log) = (c.clone(), Arc::clone(&log));
        tokio::spawn(async move {
            c.run_chunked((0..12).collect(), 4, move |i: u32, _, _| {
                log.lock().unwrap().push((name, i));
                i
            })
            .await
        })
    };
    let a = spawn('a');
    let mut tries = 0;
    while c.stats().queued < 3 {
        tries += 1;
        assert!(tries < 30_000, "batch a never queued");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let b = spawn('b');
    while c.stats().queued < 6 {
        tries += 1;
        assert!(tries < 30_000, "batch b never queued");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(hold);
    assert_eq!(a.await.unwrap().unwrap(), (0..12).collect::<Vec<_>>());
    assert_eq!(b.await.unwrap().unwrap(), (0..12).collect::<Vec<_>>());
    let names: String = log.lock().unwrap().iter().map(|&(n, _)| n).collect();
    assert_eq!(names, "aaaabbbbaaaabbbbaaaabbbb");
}

/// Cancellation: a chunked batch whose client leaves stops at the item it is on; its
/// other chunks never run, and its permit comes back.
#[tokio::test]
async fn a_chunked_batch_stops_when_its_client_leaves() {
    let c = Compute::new(1, 0);
    let ran = Arc::new(AtomicUsize::new(0));
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started = Mutex::new(Some(started_tx));
    let task = {
        let (c, ran) = (c.clone(), Arc::clone(&ran));
        tokio::spawn(async move {
            c.run_chunked((0..100).collect(), 10, move |i: u32, cancel, _| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 0 {
                    if let Some(tx) = started.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    let t = std::time::Instant::now();
                    while !cancel.load(Ordering::Relaxed) {
                        assert!(t.elapsed() < Duration::from_secs(30), "never cancelled");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                i
            })
            .await
        })
    };
    started_rx.await.unwrap();
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    // The pool (one worker, no queue) takes a request again once the batch's permit
    // is back, which needs every chunk gone.
    let mut tries = 0;
    while c.run(|_| ()).await.is_err() {
        tries += 1;
        assert!(tries < 30_000, "the batch's permit never came back");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(c.stats().queued, 0);
    assert_eq!(
        ran.load(Ordering::Relaxed),
        1,
        "only the item running when it left"
    );
}

/// A batch's parts: each turn of a chunk gathers its items into one part, and the parts
/// come back in input order, so concatenated they hold every item once, in order.
#[tokio::test]
async fn parts_gather_a_turn_each_in_input_order() {
    let c = Compute::new(2, 4);
    let parts = c
        .run_parts((0..14).collect(), 4, |i: u32, _, _, part: &mut Vec<u32>| {
            part.push(i)
        })
        .await
        .unwrap();
    assert_eq!(
        parts,
        vec![
            (0..4).collect::<Vec<_>>(),
            (4..8).collect(),
            (8..12).collect(),
            (12..14).collect()
        ]
    );
    let none = c
        .run_parts(Vec::<u32>::new(), 4, |i, _, _, part: &mut Vec<u32>| {
            part.push(i)
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// `run_batch` hands its jobs no searcher, so a job that checks out its own (a table's
/// row) holds one searcher, not two.
#[tokio::test]
async fn a_batch_job_checks_out_no_searcher_of_its_own() {
    let c = Compute::new(1, 4);
    let c2 = c.clone();
    let held = c
        .run_batch((0..3).collect(), move |_: u32, _| {
            let _mine = c2.searcher();
            c2.inner.shared.searchers.0.lock().unwrap().len()
        })
        .await
        .unwrap();
    assert_eq!(held, vec![0, 0, 0], "only the job's own searcher is out");
    assert_eq!(c.inner.shared.searchers.0.lock().unwrap().len(), 1);
}
