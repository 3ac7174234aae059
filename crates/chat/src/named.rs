//! Values with a fixed set of names: how the config spells them, what the store keeps and
//! what a command takes. One table per type, so writing and reading cannot drift apart,
//! and reading an unknown name is an error that lists the known ones.

use std::fmt;

pub trait Named: Copy + PartialEq + 'static {
    /// What the value is, as an error names it ("follow-up").
    const WHAT: &'static str;
    const NAMES: &'static [(Self, &'static str)];

    fn name(self) -> &'static str {
        let entry = Self::NAMES.iter().find(|(value, _)| *value == self);
        entry.expect("every variant has a name").1
    }

    fn from_name(name: &str) -> Option<Self> {
        let entry = Self::NAMES.iter().find(|(_, n)| *n == name);
        entry.map(|(value, _)| *value)
    }

    /// The value called `name`, or an error that lists the names there are.
    fn parse(name: &str) -> Result<Self, UnknownName> {
        Self::from_name(name).ok_or_else(|| UnknownName {
            what: Self::WHAT,
            value: name.to_owned(),
            known: Self::names().collect(),
        })
    }

    fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMES.iter().map(|(_, name)| *name)
    }
}

/// A name that is none of a [`Named`] type's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub known: Vec<&'static str>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a {}: it is one of {}",
            self.value,
            self.what,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Reads a [`Named`] value from a string in a config file (`deserialize_with`, or a
/// type's `Deserialize`), naming the valid values when it is none of them.
pub fn deserialize<'de, T: Named, D: serde::Deserializer<'de>>(input: D) -> Result<T, D::Error> {
    struct NameOf<T>(std::marker::PhantomData<T>);

    impl<T: Named> serde::de::Visitor<'_> for NameOf<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "one of {}", T::names().collect::<Vec<_>>().join(", "))
        }

        fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<T, E> {
            T::parse(name).map_err(E::custom)
        }
    }

    input.deserialize_str(NameOf(std::marker::PhantomData))
}

/// `Deserialize` (through [`deserialize`]) and `Serialize` (as its name) for a [`Named`]
/// type.
#[macro_export]
macro_rules! serde_by_name {
    ($type:ty) => {
        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
                $crate::named::deserialize(input)
            }
        }

        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
                to.serialize_str($crate::named::Named::name(*self))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Light {
        On,
        Off,
    }

    impl Named for Light {
        const WHAT: &'static str = "light";
        const NAMES: &'static [(Self, &'static str)] = &[(Light::On, "on"), (Light::Off, "off")];
    }

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_the_others() {
        for (value, name) in Light::NAMES {
            assert_eq!(value.name(), *name);
            assert_eq!(Light::parse(name), Ok(*value));
        }
        let unknown = Light::parse("dim").unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "\"dim\" is not a light: it is one of on, off"
        );
    }
}
