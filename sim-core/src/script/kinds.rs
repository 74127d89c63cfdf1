//! Which values are pointers, found before compiling, so that pointers stay
//! opaque: a pointer (made by `&inst.field`, or by `part` of one) can be
//! compared, stored, passed, returned and dereferenced, but no arithmetic
//! takes one, and `*` never takes a value that is surely an integer (a
//! number, the result of arithmetic or a comparison, a builtin's value).
//! Without this, `let p = 17600982137438208; fetch_add(*p, 1)` reached a
//! field that does not exist, and `*(&g.a * 3)` somewhere else.
//!
//! Every value is an integer at run time; its kind is where the compiler
//! can tell it may come from ([`Kind`]): an integer (a number, arithmetic, a
//! comparison, a builtin's value, a scenario parameter), a pointer (`&`,
//! `part`), or somewhere it cannot tell (a value loaded from memory or
//! returned by an atomic or a procedure, since fields may hold pointers, as
//! an MCS lock's tail does). A local's kind is every source of every value
//! assigned to it (`let`, `=`), and a procedure parameter's every source of
//! every argument passed to it at any call, iterated to a fixed point over
//! the whole program. So a local that ever holds a pointer takes no
//! arithmetic (`let p = &g.a` then `p = p + 8` is refused), and `*` takes
//! anything but a local or expression that only ever holds integers.

use super::ast::*;
use super::compile::{Builtin, ProcedureSource, ScriptSource, COST_BUILTIN};

/// Where a value may come from: a set of sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind(u8);

impl Kind {
    /// No source yet (a local before the fixed point reaches it).
    pub const UNSET: Kind = Kind(0);
    /// An integer made in the script.
    pub const INT: Kind = Kind(1);
    /// A pointer made by `&` or `part`.
    pub const POINTER: Kind = Kind(2);
    /// Memory, an atomic or a procedure's return: integer or pointer.
    pub const UNKNOWN: Kind = Kind(4);

    fn join(self, other: Kind) -> Kind {
        Kind(self.0 | other.0)
    }

    /// It may hold a pointer made by `&` or `part`: no arithmetic takes it.
    pub fn may_be_pointer(self) -> bool {
        self.0 & Kind::POINTER.0 != 0
    }

    /// It only ever holds integers made in the script: `*` cannot take it.
    pub fn only_integers(self) -> bool {
        self == Kind::INT
    }
}

/// The kind of every local (parameters first) of every function:
/// procedures in their order, then scripts in theirs.
pub struct Kinds {
    locals: Vec<Vec<(String, Kind)>>,
}

impl Kinds {
    /// Computes the kinds of a program's locals. Names the compiler will
    /// refuse (unknown locals, procedures) are taken as `UNKNOWN` here.
    pub fn of(
        params: &[(String, i64)],
        procedures: &[ProcedureSource],
        scripts: &[ScriptSource],
    ) -> Kinds {
        let mut kinds = Kinds {
            locals: procedures
                .iter()
                .map(|p| p.params.iter().map(|n| (n.clone(), Kind::UNSET)).collect())
                .chain(scripts.iter().map(|_| Vec::new()))
                .collect(),
        };
        let bodies: Vec<&Block> = procedures
            .iter()
            .map(|p| &p.body)
            .chain(scripts.iter().map(|s| &s.body))
            .collect();
        // Each round can only add sources to a kind (three at most), so
        // this ends.
        loop {
            let mut walk = Walk {
                kinds: &mut kinds,
                params,
                procedures,
                function: 0,
                changed: false,
            };
            for (f, body) in bodies.iter().enumerate() {
                walk.function = f;
                walk.block(body);
            }
            if !walk.changed {
                break;
            }
        }
        kinds
    }

    /// The kind of local `name` of function `function` (`UNKNOWN` when it
    /// is not one, or was never assigned).
    pub fn local(&self, function: usize, name: &str) -> Kind {
        match self.locals[function].iter().find(|(n, _)| n == name) {
            Some((_, k)) if *k != Kind::UNSET => *k,
            _ => Kind::UNKNOWN,
        }
    }

    /// The kind of `expr` in function `function`.
    pub fn of_expr(&self, function: usize, params: &[(String, i64)], expr: &Expr) -> Kind {
        match &expr.kind {
            ExprKind::Int(_) | ExprKind::Unary(..) | ExprKind::Binary(..) => Kind::INT,
            ExprKind::Var(name) => {
                if self.locals[function].iter().any(|(n, _)| n == name) {
                    self.local(function, name)
                } else if params.iter().any(|(p, _)| p == name) {
                    Kind::INT
                } else {
                    Kind::UNKNOWN
                }
            }
            ExprKind::Load(_) | ExprKind::Atomic(..) => Kind::UNKNOWN,
            ExprKind::Call(name, _) if name == COST_BUILTIN => Kind::INT,
            ExprKind::Call(name, _) => match Builtin::ALL.iter().find(|(n, _, _)| n == name) {
                Some((_, Builtin::Part, _)) => Kind::POINTER,
                Some(_) => Kind::INT,
                None => Kind::UNKNOWN,
            },
            ExprKind::AddressOf(place) => match &place.pointer {
                // `&*p` is `p`.
                Some(p) => self.of_expr(function, params, p),
                None => Kind::POINTER,
            },
        }
    }

    fn raise(&mut self, function: usize, name: &str, kind: Kind) -> bool {
        let locals = &mut self.locals[function];
        match locals.iter_mut().find(|(n, _)| n == name) {
            Some((_, k)) => {
                let joined = k.join(kind);
                let changed = joined != *k;
                *k = joined;
                changed
            }
            None => {
                locals.push((name.to_string(), kind));
                kind != Kind::UNSET
            }
        }
    }
}

/// One round over every body, raising the kinds of the locals assigned.
struct Walk<'a> {
    kinds: &'a mut Kinds,
    params: &'a [(String, i64)],
    procedures: &'a [ProcedureSource],
    function: usize,
    changed: bool,
}

impl Walk<'_> {
    fn block(&mut self, block: &Block) {
        for stmt in block {
            self.stmt(stmt);
        }
    }

    fn assign(&mut self, name: &str, value: &Expr) {
        self.expr(value);
        let kind = self.kinds.of_expr(self.function, self.params, value);
        self.changed |= self.kinds.raise(self.function, name, kind);
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Let { name, value } | StmtKind::Assign { name, value } => {
                self.assign(name, value)
            }
            StmtKind::Store { place, value } => {
                self.place(place);
                self.expr(value);
            }
            StmtKind::Work(e) | StmtKind::Assert(e) | StmtKind::Expr(e) => self.expr(e),
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond);
                self.block(then_block);
                if let Some(b) = else_block {
                    self.block(b);
                }
            }
            StmtKind::While { cond: e, body } | StmtKind::Repeat { count: e, body } => {
                self.expr(e);
                self.block(body);
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Fence => {}
        }
    }

    fn place(&mut self, place: &Place) {
        for e in [&place.pointer, &place.element, &place.field_index]
            .into_iter()
            .flatten()
        {
            self.expr(e);
        }
    }

    fn expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Int(_) | ExprKind::Var(_) => {}
            ExprKind::Unary(_, e) => self.expr(e),
            ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Load(place) | ExprKind::AddressOf(place) => self.place(place),
            ExprKind::Atomic(_, place, operands) => {
                self.place(place);
                for o in operands {
                    self.expr(o);
                }
            }
            ExprKind::Call(name, args) => {
                for a in args {
                    self.expr(a);
                }
                if let Some(callee) = self.procedures.iter().position(|p| &p.name == name) {
                    for (param, arg) in self.procedures[callee].params.iter().zip(args) {
                        let kind = self.kinds.of_expr(self.function, self.params, arg);
                        self.changed |= self.kinds.raise(callee, param, kind);
                    }
                }
            }
        }
    }
}
