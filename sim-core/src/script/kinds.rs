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

impl Visit for Walk<'_> {
    fn stmt(&mut self, stmt: &Stmt) {
        walk_stmt(self, stmt);
        if let StmtKind::Let { name, value } | StmtKind::Assign { name, value } = &stmt.kind {
            let kind = self.kinds.of_expr(self.function, self.params, value);
            self.changed |= self.kinds.raise(self.function, name, kind);
        }
    }

    fn expr(&mut self, expr: &Expr) {
        walk_expr(self, expr);
        if let ExprKind::Call(name, args) = &expr.kind {
            if let Some(callee) = self.procedures.iter().position(|p| &p.name == name) {
                for (param, arg) in self.procedures[callee].params.iter().zip(args) {
                    let kind = self.kinds.of_expr(self.function, self.params, arg);
                    self.changed |= self.kinds.raise(callee, param, kind);
                }
            }
        }
    }
}

/// Which procedure parameters are used as pointers, and which fields may
/// ever hold one, so that a call passing a field's value where its address
/// was meant (`spin_lock(stock.lock)` for `spin_lock(&stock.lock)`) is an
/// error when the scenario is built rather than a failed `*` at run time.
///
/// A parameter is used as a pointer when its procedure takes `*` of it (or
/// of a `part` of it), or passes it on to a parameter that is. Which values
/// may be pointers is followed through the whole program to a fixed point:
/// `&` and `part` make them; a local, a parameter or a procedure's return
/// may hold one when a value assigned, passed or returned may; a field may
/// hold one when a value stored in it (or an atomic's operand) may, and a
/// load or an atomic gives what its field may hold. A write through a
/// pointer may reach any field whose address is taken (a pointer is opaque,
/// and `part` of one stays inside its field), and a load through one may
/// read any of them. Memory starts holding integers. Elements and indices
/// are not told apart (conservative).
pub struct PointerUse {
    /// Per procedure, per parameter: used as a pointer.
    params: Vec<Vec<bool>>,
    /// Per function (procedures, then scripts): locals (parameters
    /// included) that may hold a pointer.
    locals: Vec<Vec<String>>,
    /// Per procedure: may return a pointer.
    returns: Vec<bool>,
    /// `(instance, field path)` written with a value that may be a pointer.
    fields: Vec<(String, String)>,
    /// `(instance, field path)` whose address is taken.
    addressed: Vec<(String, String)>,
    /// A value that may be a pointer was written through a pointer.
    pointer_written_through_pointer: bool,
}

impl PointerUse {
    pub fn of(procedures: &[ProcedureSource], scripts: &[ScriptSource]) -> PointerUse {
        let bodies: Vec<&Block> = procedures
            .iter()
            .map(|p| &p.body)
            .chain(scripts.iter().map(|s| &s.body))
            .collect();
        let mut facts = PointerUse {
            params: procedures
                .iter()
                .map(|p| vec![false; p.params.len()])
                .collect(),
            locals: vec![Vec::new(); bodies.len()],
            returns: vec![false; procedures.len()],
            fields: Vec::new(),
            addressed: Vec::new(),
            pointer_written_through_pointer: false,
        };
        // Each round can only add facts, so this ends.
        loop {
            let mut scan = Scan {
                procedures,
                function: 0,
                facts: &mut facts,
                changed: false,
            };
            for (f, body) in bodies.iter().enumerate() {
                scan.function = f;
                scan.block(body);
            }
            if !scan.changed {
                break;
            }
        }
        facts
    }

    /// Whether parameter `param` of procedure `procedure` is used as a pointer.
    pub fn param_is_pointer(&self, procedure: usize, param: usize) -> bool {
        self.params
            .get(procedure)
            .and_then(|p| p.get(param))
            .copied()
            .unwrap_or(false)
    }

    /// Whether field `field` of instance `instance` may ever hold a pointer.
    pub fn may_hold_pointer(&self, instance: &str, field: &str) -> bool {
        let is = |(i, f): &(String, String)| i == instance && f == field;
        self.fields.iter().any(is)
            || (self.pointer_written_through_pointer && self.addressed.iter().any(is))
    }

    /// Whether a load through a pointer may read a pointer.
    fn pointee_may_hold_pointer(&self) -> bool {
        self.addressed
            .iter()
            .any(|(i, f)| self.may_hold_pointer(i, f))
    }
}

/// One round of [`PointerUse::of`] over every body.
struct Scan<'a> {
    procedures: &'a [ProcedureSource],
    function: usize,
    facts: &'a mut PointerUse,
    changed: bool,
}

fn add<T: PartialEq>(set: &mut Vec<T>, item: T) -> bool {
    if set.contains(&item) {
        false
    } else {
        set.push(item);
        true
    }
}

impl Scan<'_> {
    /// The parameter of the current function that `e` is, or is a `part`
    /// of (`p`, `part(p, ..)`, `&*p`).
    fn param_root(&self, e: &Expr) -> Option<usize> {
        let procedure = self.procedures.get(self.function)?;
        match &e.kind {
            ExprKind::Var(name) => procedure.params.iter().position(|p| p == name),
            ExprKind::Call(name, args) if name == "part" => {
                args.first().and_then(|a| self.param_root(a))
            }
            ExprKind::AddressOf(place) => place.pointer.as_ref().and_then(|p| self.param_root(p)),
            _ => None,
        }
    }

    fn mark(&mut self, e: &Expr) {
        if let Some(k) = self.param_root(e) {
            let flag = &mut self.facts.params[self.function][k];
            self.changed |= !*flag;
            *flag = true;
        }
    }

    /// Whether `e`'s value may be a pointer, as far as this round knows.
    fn may_be_pointer(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Unary(..) | ExprKind::Binary(..) => false,
            ExprKind::Var(name) => self.facts.locals[self.function].contains(name),
            ExprKind::Load(place) | ExprKind::Atomic(_, place, _) => match &place.pointer {
                None => self.facts.may_hold_pointer(&place.instance, &place.field),
                Some(_) => self.facts.pointee_may_hold_pointer(),
            },
            ExprKind::AddressOf(place) => match &place.pointer {
                None => true,
                Some(p) => self.may_be_pointer(p),
            },
            ExprKind::Call(name, _) => match self.procedures.iter().position(|p| &p.name == name) {
                Some(callee) => self.facts.returns[callee],
                None => Builtin::ALL
                    .iter()
                    .any(|(n, b, _)| n == name && *b == Builtin::Part),
            },
        }
    }

    /// A write of `value` to `place`.
    fn write(&mut self, place: &Place, value: &Expr) {
        if !self.may_be_pointer(value) {
            return;
        }
        if place.pointer.is_some() {
            self.changed |= !self.facts.pointer_written_through_pointer;
            self.facts.pointer_written_through_pointer = true;
        } else {
            let key = (place.instance.clone(), place.field.clone());
            self.changed |= add(&mut self.facts.fields, key);
        }
    }

    fn assign(&mut self, name: &str, value: &Expr) {
        if self.may_be_pointer(value) {
            let name = name.to_string();
            self.changed |= add(&mut self.facts.locals[self.function], name);
        }
    }
}

impl Visit for Scan<'_> {
    fn stmt(&mut self, stmt: &Stmt) {
        walk_stmt(self, stmt);
        match &stmt.kind {
            StmtKind::Let { name, value } | StmtKind::Assign { name, value } => {
                self.assign(name, value)
            }
            StmtKind::Return(Some(value))
                if self.function < self.procedures.len() && self.may_be_pointer(value) =>
            {
                let flag = &mut self.facts.returns[self.function];
                self.changed |= !*flag;
                *flag = true;
            }
            StmtKind::Store { place, value } => self.write(place, value),
            _ => {}
        }
    }

    fn place(&mut self, place: &Place, deref: bool) {
        if let (Some(p), true) = (&place.pointer, deref) {
            self.mark(p);
        }
        walk_place(self, place);
    }

    fn expr(&mut self, expr: &Expr) {
        walk_expr(self, expr);
        match &expr.kind {
            ExprKind::AddressOf(place) if place.pointer.is_none() => {
                let key = (place.instance.clone(), place.field.clone());
                self.changed |= add(&mut self.facts.addressed, key);
            }
            ExprKind::Atomic(_, place, operands) => {
                for o in operands {
                    self.write(place, o);
                }
            }
            ExprKind::Call(name, args) => {
                if let Some(callee) = self.procedures.iter().position(|p| &p.name == name) {
                    for (k, a) in args.iter().enumerate() {
                        if self.facts.param_is_pointer(callee, k) {
                            self.mark(a);
                        }
                        if let Some(param) = self.procedures[callee].params.get(k) {
                            if self.may_be_pointer(a) {
                                let param = param.clone();
                                self.changed |= add(&mut self.facts.locals[callee], param);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
}
