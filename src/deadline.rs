//! Waiting for a deadline that may not exist.

use tokio::time::Instant;

/// Sleeps until `deadline`, or forever without one (for optional `select!` branches).
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
