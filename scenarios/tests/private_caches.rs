//! The machine's private-cache keys (`l1d_kib`, `l1d_ways`, `l2_kib`,
//! `l2_ways`, `l2_hit_cycles`): the preset's sourced values by default,
//! unbounded caches for a machine given whole, and each bad value an error
//! naming the file, line, key and what is valid.

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;
use sim_core::topology::PrivateCacheSpec;

/// A scenario on the machine `machine` (a TOML `[machine]` table or a
/// `machine = ...` line), its machine on line 2.
fn scenario(machine: &str) -> String {
    format!(
        r#"schema = 1
{machine}
[run]
iterations = 10
[structs.counter]
fields = [{{ name = "value", type = "unsigned long" }}]
[instances.ctr]
struct = "counter"
kind = "global"
[scripts]
inc = """
let v = ctr.value
ctr.value = v + 1
"""
[[threads]]
cpus = "0-1"
script = "inc"
"#
    )
}

/// The machine's caches, or the rendered build error.
fn caches(machine: &str) -> Result<PrivateCacheSpec, String> {
    let loaded = load_str("scenarios/test.toml", &scenario(machine)).map_err(|e| e.to_string())?;
    let built = build_all(&loaded, BuildOptions::default()).map_err(|e| e.to_string())?;
    Ok(built[0].config.topology.spec.private_caches)
}

#[test]
fn a_preset_gives_its_sourced_sizes() {
    let c = caches("machine = \"icelake-sp-2s\"").unwrap();
    assert_eq!(
        c,
        PrivateCacheSpec {
            l1d_kib: 48,
            l1d_ways: 12,
            l2_kib: 1280,
            l2_ways: 20,
            l2_hit_cycles: 14,
        }
    );
    let c = caches("machine = \"epyc-milan-2s\"").unwrap();
    assert_eq!(
        (c.l1d_kib, c.l1d_ways, c.l2_kib, c.l2_ways),
        (32, 8, 512, 8)
    );
}

#[test]
fn a_machine_file_overrides_the_preset_key_by_key() {
    let c = caches("[machine]\npreset = \"icelake-sp-2s\"\nl2_kib = 2048\nl2_ways = 16\n").unwrap();
    assert_eq!(
        (c.l1d_kib, c.l2_kib, c.l2_ways, c.l2_hit_cycles),
        (48, 2048, 16, 14)
    );
}

#[test]
fn a_machine_given_whole_without_the_keys_has_unbounded_caches() {
    let whole = "[machine]\nclock_mhz = 2000\nsockets = 1\nnodes_per_socket = 1\n\
                 l3_per_node = 1\ncores_per_l3 = 2\nthreads_per_core = 1\n\
                 line_size_bytes = 64\nprotocol = \"mesi\"\nlookup = \"home\"\n\
                 store_buffer_entries = 8\n[machine.latency]\nl1_hit_cycles = 4\n\
                 locked_op_cycles = 20\nsmt_transfer_cycles = 7\nl3_transfer_cycles = 60\n\
                 hop_in_node_cycles = 30\nhop_between_nodes_cycles = 50\n\
                 hop_between_sockets_cycles = 110\ndram_cycles = 150\nl3_hit_cycles = 40\n";
    let built = caches(whole);
    assert_eq!(built, Ok(PrivateCacheSpec::UNBOUNDED), "{built:?}");
}

/// The error of `key = value` on a machine from the Ice Lake-SP preset: it
/// names the file and line (line 4, after `[machine]` and `preset`), the
/// key, and the valid values.
#[track_caller]
fn error_of(line: &str, valid: &str) {
    let machine = format!("[machine]\npreset = \"icelake-sp-2s\"\n{line}");
    let error = caches(&machine).expect_err(line);
    let key = line.split(' ').next().unwrap();
    assert!(error.contains(&format!("`machine.{key}`")), "{error}");
    assert!(error.contains("scenarios/test.toml:4:"), "{error}");
    assert!(error.contains(valid), "{error}");
}

#[test]
fn bad_sizes_and_ways_are_errors_naming_the_key() {
    error_of("l2_ways = 16", "not a whole power of two of sets");
    error_of("l2_kib = 1000", "1000 KiB in 20 ways");
    error_of("l1d_ways = 0", "out of range 1..=64");
    error_of("l1d_ways = 65", "out of range 1..=64");
    error_of("l2_kib = 40", "out of range 48..=65536");
    error_of("l2_kib = 100000", "out of range 0..=65536");
    error_of("l2_hit_cycles = 2", "out of range 5..=1000");
    error_of("l1d_kib = 0", "out of range 1..=65536");
}

#[test]
fn a_value_of_the_wrong_type_is_a_load_error() {
    for line in ["l2_kib = -1", "l2_ways = \"twenty\"", "l2_hit_cycles = 1.5"] {
        let machine = format!("[machine]\npreset = \"icelake-sp-2s\"\n{line}");
        let error = caches(&machine).expect_err(line);
        assert!(error.contains("scenarios/test.toml:4:"), "{line}: {error}");
    }
}
