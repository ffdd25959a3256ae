//! Batch text, JSON and CSV front ends, and the column tables every front end
//! shares ([`fields`]).
pub mod calibration;
pub mod cgroups;
pub mod columns;
pub mod cpus;
pub mod csv;
pub mod devices;
pub mod fields;
pub mod format;
pub mod json;
pub mod text;
pub mod traffic;
