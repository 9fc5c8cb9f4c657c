//! The fleet: one load point spread over many hosts, each running an agent.
//!
//! The controller ([`controller`]) deals the point's VMs over the agents and
//! drives each through a [`remote::RemoteRunner`], which implements the same
//! [`crate::runner::HostRunner`] interface as the in-process
//! [`crate::runner::LocalRunner`]; the same aggregator merges hosts by
//! addition as a host merges its threads. The agent ([`agent`]) is a small
//! HTTP/JSON daemon ([`wire`] holds its versioned messages) that checks the
//! protocol version and the bearer token ([`auth`]) first, touches only the
//! targets of its allow list ([`allow`]), serves live counters
//! ([`metrics`]) and stops a run whose controller went silent.
//! See docs/fleet.md for the protocol and deployment recipes.

pub mod agent;
pub mod allow;
pub mod auth;
pub mod controller;
pub mod metrics;
pub mod progress;
pub mod remote;
pub mod wire;
