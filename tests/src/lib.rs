//! Shared helpers for ask-user's cross-crate tests: the host's HTTP contract and
//! the browser end-to-end tests. Nothing outside `tests/` may depend on this crate.

pub mod axe;
pub mod browser;
pub mod e2e;
pub mod host_process;
pub mod http_host;
pub mod mcp;
pub mod node;
pub mod postgres;
pub mod push_stub;
pub mod round_robin;
pub mod tls_front;
pub mod wait;

/// A loopback port for a child process to listen on, free a moment ago and
/// below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`): a
/// port from that range (what binding port 0 hands out) can be taken as the
/// source port of any outgoing connection before the child binds it.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u16, ephemeral_low.max(10_001));
    for attempt in 0..1000u32 {
        // Random (each RandomState has keys of its own), so that tests in
        // parallel rarely try the same port.
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u32(attempt);
        let port = low + (random.finish() % u64::from(high - low)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {low} and {high}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_free_port_is_below_the_ephemeral_range_and_can_be_listened_on() {
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .expect("the kernel's ephemeral port range");
        let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
        for _ in 0..20 {
            let port = super::free_port();
            assert!((10_000..low).contains(&port), "{port} not in 10000..{low}");
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("free to listen on");
        }
    }
}
