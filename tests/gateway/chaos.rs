//! A short seeded chaos run (`support/soak.rs`): the same faults an operator's worst day
//! brings, in a minute. `scripts/soak` runs a long one.

use std::time::Duration;

use crate::support::soak::{self, Plan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seeded_chaos_run_loses_doubles_and_misleads_nothing() {
    let plan = Plan {
        seed: 20261207,
        duration: Duration::from_secs(60),
        messages: 36,
        faults: 8,
    };
    let report = soak::run(plan).await;
    println!("{}", report.table(&plan));
    assert_eq!(report.messages, 36);
    assert!(report.answered > 0, "nothing was answered");
    assert!(report.faults.values().sum::<usize>() == 8);
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
}
