//! Metrics: the OpenMetrics families (from raw samples, for `--serve` and
//! `--export openmetrics`), the scrape endpoint and its HTTP loop.

pub mod http;
pub mod openmetrics;
pub mod serve;
