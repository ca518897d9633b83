//! What kopr keeps on the objects it handles, so that nothing is lost or
//! repeated across restarts: handler progress records ([`progress`]), the
//! diff base and the finalizer ([`storage`]).

pub mod progress;
pub mod storage;
