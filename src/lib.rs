//! nettop: top that tells the truth on busy network hosts.
//!
//! Data flows one way: collectors produce [`sample::RawSample`]s (raw,
//! cumulative counters), the model turns two of them into a
//! [`model::frame::Frame`], and every front end (TUI, batch text, JSON,
//! recordings, metrics) renders Frames. Rendering does no I/O; collectors do
//! no formatting. The modules are layers that only reach down; the order is
//! in docs/ARCHITECTURE.md and `tests/pure/layers.rs` holds it.

pub mod app;
pub mod calibrate;
pub mod collector;
pub mod metrics;
pub mod model;
pub mod output;
pub mod pinning;
pub mod plan;
pub mod record;
pub mod sample;
pub mod sys;
pub mod topology;
pub mod ui;
