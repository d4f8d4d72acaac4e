//! Shared helpers for ask-user's cross-crate tests.
