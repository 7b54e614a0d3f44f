//! Flags several commands share, each turned into what core takes: the embedding model
//! ([`model`]), retrieval ([`retrieval`]: a `SearchRequest`) and the LLM ([`llm`]).

pub(crate) mod llm;
pub(crate) mod retrieval;

/// The embedding model's flag, in the library face (`edgerag-bench` takes it too).
pub(crate) use edgerag_cli::flags::model;
