pub mod ast;
pub mod compile;
pub mod fuse;
pub mod kinds;
pub mod parse;
