//! Batch text and JSON front ends.
pub mod batch;
pub mod json;
pub mod text;
