//! Model-based tests of the pending table.
