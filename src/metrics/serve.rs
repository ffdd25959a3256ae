//! The `--serve` endpoint: pre-rendered scrape bodies behind the HTTP loop
//! ([`super::http`]) on one thread created at start. It samples nothing
//! itself: the run's one sampling loop ([`crate::app::service`]) hands it each
//! snapshot, so serving while recording costs one collector, not two.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::Context;

use super::http;
use super::openmetrics::{self, Flavor, Options};
use crate::sample::{HostInfo, RawSample};

/// Pre-rendered scrape bodies, swapped in after each sample.
struct Scrape {
    openmetrics: Arc<[u8]>,
    prometheus: Arc<[u8]>,
}

/// The two paths `--serve` answers.
fn route(req: &http::Request, scrape: &Mutex<Option<Scrape>>) -> http::Response {
    match req.path.as_str() {
        "/metrics" => {
            let om = req
                .accept
                .as_deref()
                .is_some_and(|a| a.contains("application/openmetrics-text"));
            let Ok(g) = scrape.lock() else {
                return http::Response::text(500, "sampler failed\n");
            };
            let Some(g) = g.as_ref() else {
                return http::Response::text(503, "no sample yet\n");
            };
            if om {
                http::Response {
                    status: 200,
                    content_type: openmetrics::OPENMETRICS_CONTENT_TYPE,
                    body: Arc::clone(&g.openmetrics),
                }
            } else {
                http::Response {
                    status: 200,
                    content_type: openmetrics::PROMETHEUS_CONTENT_TYPE,
                    body: Arc::clone(&g.prometheus),
                }
            }
        }
        "/" => http::Response::text(200, "nettop: metrics at /metrics\n"),
        _ => http::Response::text(404, "not found\n"),
    }
}

/// Binds ADDR. Done before the collector loads BPF, so a busy port fails
/// first.
pub fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("--serve: cannot listen on {addr}: {e}"))
}

/// An endpoint: the HTTP loop starts with the first scrape body, so every
/// request is answered with data (connections made before wait in the
/// listen backlog; the port is bound from the start).
pub struct Endpoint {
    scrape: Arc<Mutex<Option<Scrape>>>,
    pending: Option<TcpListener>,
    http: Option<JoinHandle<()>>,
    listener_error: Arc<Mutex<Option<String>>>,
    stop: Arc<AtomicBool>,
    bound: String,
    host: HostInfo,
    opts: Options,
}

impl Endpoint {
    /// An endpoint on `listener`, answering from the first [`Endpoint::update`]
    /// on. Setting `stop` ends the HTTP loop; the loop sets it itself if the
    /// listening socket fails.
    pub fn new(
        listener: TcpListener,
        host: HostInfo,
        opts: Options,
        stop: Arc<AtomicBool>,
    ) -> Endpoint {
        let bound = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        Endpoint {
            scrape: Arc::default(),
            pending: Some(listener),
            http: None,
            listener_error: Arc::default(),
            stop,
            bound,
            host,
            opts,
        }
    }

    /// Starts the HTTP loop on its one thread.
    fn start(&mut self, listener: TcpListener) -> anyhow::Result<()> {
        let limits = http::Limits::default().fit_fd_limit();
        let (stop, scrape, err) = (
            Arc::clone(&self.stop),
            Arc::clone(&self.scrape),
            Arc::clone(&self.listener_error),
        );
        let h = std::thread::Builder::new()
            .name("nettop-http".into())
            .spawn(move || {
                let handler = |r: &http::Request| route(r, &scrape);
                if let Err(e) = http::run(&listener, &handler, &stop, &limits) {
                    if let Ok(mut g) = err.lock() {
                        *g = Some(e.to_string());
                    }
                    // Without a listener there is no endpoint: end the run.
                    stop.store(true, Ordering::Relaxed);
                }
            })
            .context("--serve: cannot start the HTTP thread")?;
        self.http = Some(h);
        Ok(())
    }

    /// The address actually bound (port 0 resolved).
    pub fn bound(&self) -> &str {
        &self.bound
    }

    /// The recording's health, shown from the next [`Endpoint::update`] on.
    pub fn set_recording(&mut self, health: openmetrics::RecordingHealth) {
        self.opts.recording = Some(health);
    }

    /// Renders the scrape for the interval `prev` → `cur`; the first call
    /// starts answering.
    pub fn update(&mut self, prev: Option<&RawSample>, cur: &RawSample) -> anyhow::Result<()> {
        let fams = openmetrics::families(&self.host, prev, cur, &self.opts);
        let s = Scrape {
            openmetrics: Arc::from(openmetrics::render(&fams, Flavor::OpenMetrics).into_bytes()),
            prometheus: Arc::from(openmetrics::render(&fams, Flavor::Prometheus).into_bytes()),
        };
        if let Ok(mut g) = self.scrape.lock() {
            *g = Some(s);
        }
        match self.pending.take() {
            Some(l) => self.start(l),
            None => Ok(()),
        }
    }

    /// Stops the HTTP loop; an error if the listener had failed.
    pub fn finish(self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.http {
            let _ = h.join();
        }
        if let Some(e) = self.listener_error.lock().ok().and_then(|mut g| g.take()) {
            anyhow::bail!("--serve: the HTTP listener on {} failed: {e}", self.bound);
        }
        Ok(())
    }
}
