//! Cloudflare Worker for edgerag (HTTP API arrives with the edge issue).
