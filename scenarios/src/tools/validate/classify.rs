//! The classes the validation reports a machine by, from its (adjusted)
//! topology: SMT siblings; same L3 domain; two CCXs of one CCD (where a CCD
//! holds more than one); two CCDs or dies of one socket, split on AMD by
//! whether that socket is the line's home; two sockets.

use models::calibration::{LineHome, Vendor};
use sim_core::cpu::LinuxCpu;
use sim_core::topology::Topology;

/// A class of CPU pairs, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    SmtSiblings,
    SameL3,
    /// Two L3 domains (CCXs) of one CCD or die.
    CrossCcxSameCcd,
    /// Two L3 domains of one socket, not split by home (Intel: its snoop
    /// filter resolves a transfer in the requester's socket).
    CrossL3SameSocket,
    /// Two CCDs (or dies) of the socket that holds the line's home node.
    CrossCcdHomeSocket,
    /// Two CCDs (or dies) of a socket that does not.
    CrossCcdOtherSocket,
    CrossSocket,
}

impl Class {
    /// Every class, nearest first.
    pub const ALL: [Class; 7] = [
        Class::SmtSiblings,
        Class::SameL3,
        Class::CrossCcxSameCcd,
        Class::CrossL3SameSocket,
        Class::CrossCcdHomeSocket,
        Class::CrossCcdOtherSocket,
        Class::CrossSocket,
    ];

    /// A stable name, for CSV and for `models::calibration::KnownMiss`.
    pub fn key(self) -> &'static str {
        match self {
            Class::SmtSiblings => "smt",
            Class::SameL3 => "same-l3",
            Class::CrossCcxSameCcd => "cross-ccx-same-ccd",
            Class::CrossL3SameSocket => "cross-l3-same-socket",
            Class::CrossCcdHomeSocket => "cross-ccd-home-socket",
            Class::CrossCcdOtherSocket => "cross-ccd-other-socket",
            Class::CrossSocket => "cross-socket",
        }
    }
}

/// Classifies pairs of one machine.
#[derive(Clone, Debug)]
pub struct Classifier {
    topology: Topology,
    vendor: Vendor,
    ccx_per_ccd: u32,
    ccd_name: String,
    home: LineHome,
}

impl Classifier {
    /// `ccx_per_ccd` L3 domains of one node form a CCD (or die) named
    /// `ccd_name`; it must divide the topology's L3 domains per node.
    pub fn new(
        topology: &Topology,
        vendor: Vendor,
        ccx_per_ccd: u32,
        ccd_name: &str,
        home: LineHome,
    ) -> Classifier {
        Classifier {
            topology: topology.clone(),
            vendor,
            ccx_per_ccd: ccx_per_ccd.max(1),
            ccd_name: ccd_name.to_string(),
            home,
        }
    }

    /// CPUs of the classified machine.
    pub fn cpu_count(&self) -> u32 {
        self.topology.cpu_count()
    }

    fn home_socket(&self, first: LinuxCpu) -> u32 {
        match self.home {
            LineHome::Node(node) => self.topology.socket_of_node(node),
            LineHome::FirstCpu => self.topology.socket_of(first),
        }
    }

    fn ccd_of(&self, cpu: LinuxCpu) -> u32 {
        self.topology.l3_of(cpu) / self.ccx_per_ccd
    }

    /// The class of two distinct CPUs, `a` the one that moves first (whose
    /// node is the home under [`LineHome::FirstCpu`]).
    pub fn class(&self, a: LinuxCpu, b: LinuxCpu) -> Class {
        let t = &self.topology;
        if t.core_of(a) == t.core_of(b) {
            Class::SmtSiblings
        } else if t.l3_of(a) == t.l3_of(b) {
            Class::SameL3
        } else if t.socket_of(a) != t.socket_of(b) {
            Class::CrossSocket
        } else if self.ccx_per_ccd > 1 && self.ccd_of(a) == self.ccd_of(b) {
            Class::CrossCcxSameCcd
        } else if self.vendor == Vendor::Intel {
            Class::CrossL3SameSocket
        } else if t.socket_of(a) == self.home_socket(a) {
            Class::CrossCcdHomeSocket
        } else {
            Class::CrossCcdOtherSocket
        }
    }

    /// How the report names a class on this machine.
    pub fn label(&self, class: Class) -> String {
        let t = &self.topology;
        let ccd = &self.ccd_name;
        match class {
            Class::SmtSiblings => "SMT siblings".into(),
            Class::SameL3 => match self.vendor {
                Vendor::Intel if t.spec.nodes_per_socket * t.spec.l3_per_node == 1 => {
                    "same socket (one L3)".into()
                }
                Vendor::Intel => "same L3 domain".into(),
                Vendor::Amd => "same CCX (L3)".into(),
            },
            Class::CrossCcxSameCcd => format!("cross-CCX, same {ccd}"),
            Class::CrossL3SameSocket => "same socket, other L3".into(),
            Class::CrossCcdHomeSocket => format!("cross-{ccd}, home socket"),
            Class::CrossCcdOtherSocket => format!("cross-{ccd}, other socket"),
            Class::CrossSocket => "cross-socket".into(),
        }
    }
}
