//! Template arguments: compile-time values a call passes into the source.

use std::borrow::Cow;

use crate::dtype::DType;

/// A template argument's value. As in MLX, an int, a bool or a dtype.
///
/// `Int(1)` and `Bool(true)` print the same in a template list but are
/// different variants: the variant key records the kind, so they never share
/// a compiled kernel (`sizeof(T)` differs, for one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TemplateArg {
    /// An `int` template parameter.
    Int(i32),
    /// A `bool` template parameter.
    Bool(bool),
    /// A `typename` template parameter.
    DType(DType),
}

impl TemplateArg {
    /// The kind's index (0 int, 1 bool, 2 dtype), the order MLX's variant uses.
    pub(crate) fn kind(&self) -> u8 {
        match self {
            TemplateArg::Int(_) => 0,
            TemplateArg::Bool(_) => 1,
            TemplateArg::DType(_) => 2,
        }
    }
}

impl From<i32> for TemplateArg {
    fn from(v: i32) -> Self {
        TemplateArg::Int(v)
    }
}
impl From<bool> for TemplateArg {
    fn from(v: bool) -> Self {
        TemplateArg::Bool(v)
    }
}
impl From<DType> for TemplateArg {
    fn from(v: DType) -> Self {
        TemplateArg::DType(v)
    }
}

/// A named template argument of one call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateParam<'a> {
    /// The parameter's name in the template list.
    pub name: Cow<'a, str>,
    /// Its value.
    pub value: TemplateArg,
}

impl TemplateParam<'_> {
    /// An owned copy, for launches that outlive the call's borrows.
    pub fn into_owned(self) -> TemplateParam<'static> {
        TemplateParam {
            name: Cow::Owned(self.name.into_owned()),
            value: self.value,
        }
    }
}
