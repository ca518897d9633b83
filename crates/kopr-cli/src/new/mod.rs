//! `kopr new`: scaffolds an operator crate (the equivalent of kubebuilder's `init` +
//! `create api`): the custom resource type, create/update/delete handlers, a test on
//! `kopr::testing`, a Dockerfile and a README. The result builds and passes its tests as
//! generated.

mod templates;

use std::path::PathBuf;

use anyhow::{Context, bail};

/// Options of `kopr new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The crate and binary name (lowercase letters, digits and dashes).
    pub name: String,
    /// The API group of the custom resource, e.g. `demo.example.com`.
    #[arg(long)]
    pub group: String,
    /// The API version, e.g. `v1`.
    #[arg(long, default_value = "v1")]
    pub version: String,
    /// The kind, e.g. `Demo` (UpperCamelCase).
    #[arg(long)]
    pub kind: String,
    /// Where to create the crate (default: `./NAME`).
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Depend on the kopr crate at this local path (the Dockerfile cannot see a path outside
    /// the crate). Without `--kopr-path`, `--kopr-git` or `--kopr-published`, a `kopr` run from
    /// a checkout's target directory depends on that checkout's `crates/kopr`, and any other
    /// on the published version.
    #[arg(long, conflicts_with_all = ["kopr_git", "kopr_published"])]
    pub kopr_path: Option<PathBuf>,
    /// Depend on kopr from this git repository.
    #[arg(long, conflicts_with = "kopr_published")]
    pub kopr_git: Option<String>,
    /// Depend on the published kopr even when run from a checkout.
    #[arg(long)]
    pub kopr_published: bool,
}

/// The kopr checkout whose target directory holds `exe`, found at run time (never baked in
/// at build time, so a copy of the binary moved elsewhere finds none): the parent of a
/// `target` directory above it that holds a workspace with `crates/kopr`.
fn checkout_of(exe: &std::path::Path) -> Option<PathBuf> {
    exe.ancestors()
        .filter(|dir| dir.file_name().is_some_and(|name| name == "target"))
        .filter_map(std::path::Path::parent)
        .find(|root| {
            root.join("crates/kopr/Cargo.toml").is_file()
                && std::fs::read_to_string(root.join("Cargo.toml"))
                    .is_ok_and(|text| text.contains("[workspace]"))
        })
        .map(std::path::Path::to_path_buf)
}

/// The local kopr to depend on: the one asked for, else the checkout this binary runs from.
fn local_kopr(args: &NewArgs) -> Option<PathBuf> {
    if args.kopr_path.is_some() {
        return args.kopr_path.clone();
    }
    if args.kopr_git.is_some() || args.kopr_published {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let exe = exe.canonicalize().unwrap_or(exe);
    checkout_of(&exe).map(|root| root.join("crates/kopr"))
}

/// What the templates are filled with.
pub struct Names {
    /// Crate and binary name.
    pub name: String,
    /// The crate name as a Rust identifier.
    pub crate_ident: String,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Lowercase plural.
    pub plural: String,
    /// The `kopr = ...` dependency line.
    pub kopr_dependency: String,
    /// Whether kopr comes from a local path (which an image build cannot see).
    pub local_kopr: bool,
}

fn check(args: &NewArgs) -> anyhow::Result<()> {
    let name_ok = !args.name.is_empty()
        && args.name.len() <= 63
        && args.name.starts_with(|c: char| c.is_ascii_lowercase())
        && args
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !args.name.ends_with('-');
    if !name_ok {
        bail!(
            "invalid name {:?}: use lowercase letters, digits and dashes, starting with a letter",
            args.name
        );
    }
    let group_ok = args.group.contains('.')
        && args.group.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
    if !group_ok {
        bail!(
            "invalid group {:?}: a DNS subdomain with at least one dot, e.g. demo.example.com",
            args.group
        );
    }
    let version_ok = args.version.starts_with('v')
        && args.version[1..].starts_with(|c: char| c.is_ascii_digit())
        && args
            .version
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !version_ok {
        bail!(
            "invalid version {:?}: like v1, v1beta1 or v2alpha3",
            args.version
        );
    }
    let kind_ok = args.kind.starts_with(|c: char| c.is_ascii_uppercase())
        && args.kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !kind_ok {
        bail!(
            "invalid kind {:?}: UpperCamelCase letters and digits",
            args.kind
        );
    }
    Ok(())
}

/// The plural kube-derive gives a kind (lowercase, with English plural rules for the usual
/// endings), so the generated README and samples name the resource as the CRD does.
fn plural_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

/// The `kopr = ...` line: a version requirement for the published crate, or
/// the path or git repository asked for.
fn kopr_dependency(args: &NewArgs, local: Option<&std::path::Path>) -> String {
    if let Some(path) = local {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        return format!("kopr = {{ path = {:?} }}", path.display().to_string());
    }
    if let Some(url) = &args.kopr_git {
        return format!("kopr = {{ git = {url:?} }}");
    }
    format!("kopr = \"{}\"", env!("CARGO_PKG_VERSION"))
}

/// Writes the new crate; returns its directory.
pub fn run(args: NewArgs) -> anyhow::Result<PathBuf> {
    check(&args)?;
    let dir = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists()
        && dir
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!("{} already exists and is not empty", dir.display());
    }
    let local = local_kopr(&args);
    let kopr_dependency = kopr_dependency(&args, local.as_deref());
    let local_kopr = local.is_some();
    let names = Names {
        crate_ident: args.name.replace('-', "_"),
        plural: plural_of(&args.kind),
        name: args.name,
        group: args.group,
        version: args.version,
        kind: args.kind,
        kopr_dependency,
        local_kopr,
    };
    for (relative, text) in templates::files(&names) {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_kube_derive() {
        assert_eq!(plural_of("Demo"), "demos");
        assert_eq!(plural_of("Policy"), "policies");
        assert_eq!(plural_of("Gateway"), "gateways");
        assert_eq!(plural_of("Class"), "classes");
    }

    #[test]
    fn bad_names_are_refused() {
        let args = |name: &str, group: &str, version: &str, kind: &str| NewArgs {
            name: name.into(),
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            path: None,
            kopr_path: None,
            kopr_git: None,
            kopr_published: false,
        };
        assert!(check(&args("demo-op", "demo.example.com", "v1", "Demo")).is_ok());
        assert!(check(&args("Demo", "demo.example.com", "v1", "Demo")).is_err());
        assert!(check(&args("demo", "example", "v1", "Demo")).is_err());
        assert!(check(&args("demo", "demo.example.com", "1", "Demo")).is_err());
        assert!(check(&args("demo", "demo.example.com", "v1", "demo")).is_err());
    }

    #[test]
    fn a_checkout_is_found_above_its_target_directory_only() {
        let root = std::env::temp_dir().join(format!("kopr-checkout-{}", std::process::id()));
        std::fs::create_dir_all(root.join("crates/kopr")).unwrap();
        std::fs::write(root.join("crates/kopr/Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(root.join("Cargo.toml"), "[workspace]\n").unwrap();
        let exe = root.join("target/release/kopr");
        assert_eq!(checkout_of(&exe), Some(root.clone()));
        assert_eq!(
            checkout_of(&root.join("bin/kopr")),
            None,
            "not in its target directory"
        );
        assert_eq!(
            checkout_of(std::path::Path::new("/usr/local/bin/kopr")),
            None
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
