"""The load generator's wire: raw HTTP/1.1 connections and streams, the event loop, and the API key
it sends."""
