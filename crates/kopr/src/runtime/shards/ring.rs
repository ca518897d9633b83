//! Where objects and shards go: an object's virtual shard is a fixed hash of its
//! `namespace/name`, and each shard's owner is the live member that ranks highest for it
//! (rendezvous hashing), so a member joining takes only the shards it now ranks highest for,
//! and a member leaving gives away only its own.
//!
//! The hash is FNV-1a (64 bits, the `fnv` crate), finished with a 64-bit mixer: a fixed
//! algorithm, so that replicas built by different compilers or kopr versions agree.

use std::hash::Hasher;

/// FNV-1a of `parts` (separated, so that `("ab", "c")` and `("a", "bc")` differ), mixed.
fn hash(parts: &[&[u8]]) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    for part in parts {
        hasher.write(part);
        hasher.write_u8(0xff);
    }
    mix(hasher.finish())
}

/// splitmix64's finalizer: spreads FNV's weak low bits over the whole word.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The virtual shard of the object `namespace/name` (`name` for cluster-scoped objects), of
/// `count` shards.
///
/// ```
/// use kopr::shards::shard_of;
/// let shard = shard_of(Some("default"), "hello", 64);
/// assert!(shard < 64);
/// assert_eq!(shard, shard_of(Some("default"), "hello", 64));
/// ```
pub fn shard_of(namespace: Option<&str>, name: &str, count: u32) -> u32 {
    let namespace = namespace.unwrap_or_default();
    let count = u64::from(count.max(1));
    u32::try_from(hash(&[namespace.as_bytes(), name.as_bytes()]) % count).unwrap_or(0)
}

/// The owner of each of `count` shards among `members` (identities; order does not matter):
/// for each shard, the member whose `hash(member, shard)` is highest. Empty strings when there
/// are no members.
///
/// ```
/// use kopr::shards::assign;
/// let two = assign(64, &["a".to_string(), "b".to_string()]);
/// let three = assign(64, &["a".to_string(), "b".to_string(), "c".to_string()]);
/// // Only shards that go to the newcomer move.
/// assert!(two.iter().zip(&three).all(|(before, after)| before == after || after == "c"));
/// ```
pub fn assign(count: u32, members: &[String]) -> Vec<String> {
    (0..count)
        .map(|shard| {
            members
                .iter()
                .max_by_key(|member| (hash(&[member.as_bytes(), &shard.to_be_bytes()]), *member))
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("op-{i}_{:08x}", i * 7919)).collect()
    }

    #[test]
    fn shards_spread_evenly_enough() {
        let members = names(3);
        let owners = assign(64, &members);
        for member in &members {
            let held = owners.iter().filter(|o| *o == member).count();
            assert!((10..=32).contains(&held), "{member} holds {held} of 64");
        }
        let mut per_shard = [0u32; 64];
        for i in 0..6400 {
            per_shard[shard_of(Some("ns"), &format!("object-{i}"), 64) as usize] += 1;
        }
        assert!(
            per_shard.iter().all(|&n| (50..=160).contains(&n)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn a_member_joining_takes_only_its_share_and_one_leaving_gives_only_its_own() {
        let members = names(4);
        let before = assign(256, &members[..3]);
        let after = assign(256, &members);
        let moved: Vec<usize> = (0..256).filter(|&i| before[i] != after[i]).collect();
        assert!(moved.iter().all(|&i| after[i] == members[3]));
        assert!((40..=100).contains(&moved.len()), "{} moved", moved.len());
        let without = assign(
            256,
            &[members[0].clone(), members[2].clone(), members[3].clone()],
        );
        for i in 0..256 {
            if after[i] != members[1] {
                assert_eq!(
                    after[i], without[i],
                    "shard {i} moved though its owner stayed"
                );
            }
        }
    }

    #[test]
    fn the_order_of_members_does_not_matter_and_none_means_unowned() {
        let members = names(3);
        let mut reversed = members.clone();
        reversed.reverse();
        assert_eq!(assign(64, &members), assign(64, &reversed));
        assert!(assign(4, &[]).iter().all(String::is_empty));
        assert_ne!(
            shard_of(Some("ab"), "c", 1 << 20),
            shard_of(Some("a"), "bc", 1 << 20)
        );
        assert_eq!(shard_of(None, "x", 0), 0);
    }
}
