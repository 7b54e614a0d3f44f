//! Flags several commands share, each turned into what core takes: the embedding model
//! ([`model`]), retrieval ([`retrieval`]: a `SearchRequest`) and the LLM ([`llm`]).

pub(crate) mod llm;
pub(crate) mod model;
pub(crate) mod retrieval;
