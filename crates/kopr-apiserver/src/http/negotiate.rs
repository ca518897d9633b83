//! Content negotiation: what representation the Accept header asks for.

/// What the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// Plain JSON objects.
    Json,
    /// meta.k8s.io/v1 Table.
    Table,
    /// apidiscovery.k8s.io/v2 aggregated discovery.
    AggregatedDiscovery,
}

/// Reads the Accept header; the first acceptable alternative wins.
pub fn representation(accept: Option<&str>) -> Representation {
    let Some(accept) = accept else {
        return Representation::Json;
    };
    for alt in accept.split(',') {
        let mut params = alt.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        if !matches!(media, "application/json" | "*/*" | "application/*") {
            continue;
        }
        let (mut as_, mut g, mut v) = ("", "", "");
        for p in params {
            match p.split_once('=') {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        match (as_, g, v) {
            ("", _, _) => return Representation::Json,
            ("Table", "meta.k8s.io", "v1") => return Representation::Table,
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2") => {
                return Representation::AggregatedDiscovery;
            }
            _ => continue,
        }
    }
    Representation::Json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_headers() {
        assert_eq!(
            representation(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            )),
            Representation::Table
        );
        assert_eq!(
            representation(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Representation::AggregatedDiscovery
        );
        assert_eq!(
            representation(Some(
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"
            )),
            Representation::Json
        );
        assert_eq!(representation(None), Representation::Json);
    }
}
