//! `GET /healthz` (200 once the consumer's files are in place, else 503: the container health
//! check Envoy's start waits on), `GET /ready` (200 once Envoy runs the live bundle: its CDS and
//! RDS version texts carry the live hash — Envoy's own `/ready` says LIVE even after it refused a
//! file) and `GET /status` (what is live, the last poll, error and rejection, as JSON).

use crate::deliver::Target;
use crate::error::SidecarError;
use crate::state::SharedStatus;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// Binds `addr` now (so a taken port fails at start) and serves until the task is dropped.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, SidecarError> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| SidecarError::Listen {
            addr: addr.to_string(),
            reason: e.to_string(),
        })
}

pub async fn serve(listener: TcpListener, target: Target, status: SharedStatus) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "health server accept");
                continue;
            }
        };
        let target = target.clone();
        let status = status.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let (target, status) = (target.clone(), status.clone());
                async move { Ok::<_, Infallible>(answer(&req, &target, &status).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "health server connection");
            }
        });
    }
}

async fn answer(
    req: &Request<Incoming>,
    target: &Target,
    status: &SharedStatus,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET {
        return respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".into(),
        );
    }
    match req.uri().path() {
        "/healthz" if target.files_present() => {
            respond(StatusCode::OK, "text/plain", "ok\n".into())
        }
        "/healthz" => respond(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "config files not delivered yet\n".into(),
        ),
        "/ready" => match ready(target, status).await {
            Ok(hash) => respond(StatusCode::OK, "text/plain", format!("envoy runs {hash}\n")),
            Err(why) => respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!("{why}\n"),
            ),
        },
        "/status" => match serde_json::to_string(&status.snapshot()) {
            Ok(mut body) => {
                body.push('\n');
                respond(StatusCode::OK, "application/json", body)
            }
            Err(e) => respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                format!("{e}\n"),
            ),
        },
        _ => respond(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found; try /healthz, /ready or /status\n".into(),
        ),
    }
}

/// The live hash when the consumer runs it, else why not.
async fn ready(target: &Target, status: &SharedStatus) -> Result<String, String> {
    let snapshot = status.snapshot();
    if let Some(stalled) = snapshot.stalled {
        return Err(stalled);
    }
    let live = snapshot
        .live
        .map(|l| l.hash)
        .ok_or("no bundle delivered yet")?;
    match target {
        Target::RateLimit { .. } if target.files_present() => Ok(live),
        Target::RateLimit { .. } => Err("ratelimit.yaml not delivered yet".into()),
        Target::Envoy(envoy) => {
            let stats = envoy.admin.stats().await.map_err(|e| e.to_string())?;
            let (cds, rds, jwt) = (stats.cds_version(), stats.rds_version(), stats.jwt_version());
            let here = Some(live.as_str());
            // No JWT version at all: Envoy's bootstrap predates the filter's discovery, which a
            // bundle with providers never goes live on (its delivery waits for it).
            if cds == here && rds == here && (jwt == here || jwt.is_none()) {
                Ok(live)
            } else {
                Err(format!(
                    "envoy runs clusters {}, routes {} and JWT providers {}, not the live {live}",
                    cds.unwrap_or("none"),
                    rds.unwrap_or("none"),
                    jwt.unwrap_or("none")
                ))
            }
        }
    }
}

fn respond(code: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = code;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}
