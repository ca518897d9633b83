//! What kopr keeps on the objects it handles, so that nothing is lost or
//! repeated across restarts: handler progress records ([`progress`]), the
//! diff base and the finalizer ([`storage`]), under the names of the operator's
//! [`identity`].

pub mod identity;
pub mod progress;
pub mod storage;
