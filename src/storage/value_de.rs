//! The one deserializer the core reads its types with: a borrowed [`Value`] whose structs
//! are JSON objects only.
//!
//! `serde_json`'s `&Value` deserializer also reads a struct from a JSON array (its fields
//! in order), so every derived type was compiled with a second, positional reader the
//! core never writes: 33 of them, about 35 KB of the component before `wasm-opt`. Here a
//! struct from anything but an object is an `invalid type` error, and everything else
//! reads as through `&Value`: scalars are handed to it, arrays, objects, options and
//! enums are walked here so that what they hold is read here too. Object keys are read
//! as strings (no type the core reads has a map with keys of another type).
//! [`read_naming`] reads the same way and also says in which member of the top-level
//! object a read failed, so a shell names the argument at fault from one read.

use std::cell::Cell;

use serde::de::DeserializeOwned;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, Error as _, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde_json::{Error, Map, Value};

/// A borrowed JSON value to read a type from ([`crate::record::read`]).
#[derive(Clone, Copy)]
pub(crate) struct Json<'a>(pub(crate) &'a Value);

/// `T` from `value`; when the error came from reading the value of one member of the
/// top-level object, that member's name is left in `at`. A caller naming the argument at
/// fault needs no second reader per member for it.
pub(crate) fn read_naming<'a, T: DeserializeOwned>(
    value: &'a Value,
    at: &'a Cell<Option<&'a str>>,
) -> Result<T, Error> {
    T::deserialize(Top { value, at })
}

/// What a value is, for `invalid type` errors.
fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (None, Some(i)) => Unexpected::Signed(i),
            _ => Unexpected::Other("floating point number"),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn visit_array<'a, V: Visitor<'a>>(array: &'a [Value], visitor: V) -> Result<V::Value, Error> {
    let mut seq = Seq(array.iter());
    let out = visitor.visit_seq(&mut seq)?;
    match seq.0.len() {
        0 => Ok(out),
        _ => Err(Error::invalid_length(
            array.len(),
            &"fewer elements in array",
        )),
    }
}

fn visit_object<'a, V: Visitor<'a>>(
    object: &'a Map<String, Value>,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut map = Members::of(object);
    let out = visitor.visit_map(&mut map)?;
    map.end(object)?;
    Ok(out)
}

/// Hands the scalar readers to `&Value`, whose scalars hold nothing to walk.
macro_rules! scalars {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
            self.0.$method(visitor)
        }
    )*};
}

impl<'a> Deserializer<'a> for Json<'a> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(array) => visit_array(array, visitor),
            Value::Object(object) => visit_object(object, visitor),
            // Each scalar by itself: `&Value`'s own `deserialize_any` would compile its
            // array and object readers for every visitor that comes here.
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => n.deserialize_any(visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
        }
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    scalars! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_unit
        deserialize_identifier
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(array) => visit_array(array, visitor),
            other => Err(Error::invalid_type(unexpected(other), &visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(object) => visit_object(object, visitor),
            other => Err(Error::invalid_type(unexpected(other), &visitor)),
        }
    }

    /// Objects only: the positional reader of a struct is never compiled.
    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(variant) => visitor.visit_enum(Variant {
                name: variant,
                value: None,
            }),
            Value::Object(object) => {
                let mut members = object.iter();
                match (members.next(), members.next()) {
                    (Some((name, value)), None) => visitor.visit_enum(Variant {
                        name,
                        value: Some(value),
                    }),
                    _ => Err(Error::invalid_value(
                        Unexpected::Map,
                        &"map with a single key",
                    )),
                }
            }
            other => Err(Error::invalid_type(unexpected(other), &"string or map")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// The elements of an array.
struct Seq<'a>(std::slice::Iter<'a, Value>);

impl<'a> SeqAccess<'a> for Seq<'a> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|v| seed.deserialize(Json(v))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// The members of an object.
struct Members<'a> {
    iter: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
    /// The name of the member last asked for: `None` before the first and after the last.
    key: Option<&'a str>,
}

impl<'a> Members<'a> {
    fn of(object: &'a Map<String, Value>) -> Self {
        Members {
            iter: object.iter(),
            value: None,
            key: None,
        }
    }

    /// An error when the reader of `object` left some of its members unread.
    fn end(&self, object: &Map<String, Value>) -> Result<(), Error> {
        match self.iter.len() {
            0 => Ok(()),
            _ => Err(Error::invalid_length(
                object.len(),
                &"fewer elements in map",
            )),
        }
    }

    /// The member whose value was being read when the reader stopped: one was asked for,
    /// its value was taken, and no next member was asked for.
    fn stopped_in(&self) -> Option<&'a str> {
        self.key.filter(|_| self.value.is_none())
    }
}

/// The top-level value of [`read_naming`]: an object's reader notes in `at` the member it
/// stopped in. Everything else reads as [`Json`] reads it, and what an object holds is
/// read by `Json`, so no type gets a second reader.
struct Top<'a> {
    value: &'a Value,
    at: &'a Cell<Option<&'a str>>,
}

impl<'a> Top<'a> {
    fn visit_object<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(object) => {
                let mut map = Members::of(object);
                let out = visitor
                    .visit_map(&mut map)
                    .inspect_err(|_| self.at.set(map.stopped_in()))?;
                map.end(object)?;
                Ok(out)
            }
            other => Err(Error::invalid_type(unexpected(other), &visitor)),
        }
    }
}

/// Hands a method of [`Top`] to [`Json`].
macro_rules! to_json {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?)*) => {$(
        fn $method<V: Visitor<'a>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value, Error> {
            Json(self.value).$method($($($arg,)*)? visitor)
        }
    )*};
}

impl<'a> Deserializer<'a> for Top<'a> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Object(_) => self.visit_object(visitor),
            _ => Json(self.value).deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Error> {
        self.visit_object(visitor)
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.visit_object(visitor)
    }

    to_json! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_option
        deserialize_unit deserialize_seq deserialize_identifier deserialize_ignored_any
        deserialize_unit_struct(name: &'static str)
        deserialize_newtype_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }
}

impl<'a> MapAccess<'a> for Members<'a> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((key, value)) => {
                (self.key, self.value) = (Some(key.as_str()), Some(value));
                seed.deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some)
            }
            None => {
                self.key = None;
                Ok(None)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(Json(value)),
            None => Err(Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An enum's variant name and, unless it is a bare string, its content.
struct Variant<'a> {
    name: &'a str,
    value: Option<&'a Value>,
}

impl<'a> EnumAccess<'a> for Variant<'a> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'a>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        Ok((
            seed.deserialize(BorrowedStrDeserializer::new(self.name))?,
            self,
        ))
    }
}

impl<'a> VariantAccess<'a> for Variant<'a> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.value {
            None | Some(Value::Null) => Ok(()),
            Some(other) => Err(Error::invalid_type(unexpected(other), &"unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> Result<T::Value, Error> {
        match self.value {
            Some(value) => seed.deserialize(Json(value)),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Some(value) => Json(value).deserialize_seq(visitor),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Some(value) => Json(value).deserialize_map(visitor),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
#[path = "tests/value_de.rs"]
mod tests;
