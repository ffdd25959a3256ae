//! Batch text and JSON front ends.
pub mod batch;
