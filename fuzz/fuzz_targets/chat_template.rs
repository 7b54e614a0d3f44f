//! The local model's prompt path (`generate`): a conversation whose message contents are
//! fuzzed is rendered with the chat model's own template and tokenized. No special token
//! (`<|im_start|>`, `<|im_end|>`, …: the control and user-defined tokens of the GGUF file) may
//! come from a message's content: the special tokens of the prompt must be exactly those of
//! the same conversation with every content replaced by a plain word.
//!
//! Needs the chat model: `EDGERAG_CHAT_MODEL` names its GGUF file (scripts/fuzz.sh passes the
//! default one, SmolLM2-135M-Instruct, from the cache `make models` fills).
#![no_main]

use std::collections::HashSet;
use std::fs::File;
use std::io::BufReader;

use candle_core::quantized::gguf_file::{Content, Value};
use edgerag_core::generate::{LocalModel, Weights};
use edgerag_core::llm::{Message, Role};
use libfuzzer_sys::fuzz_target;

/// llama.cpp's token types that tokenizers never split: control and user-defined.
const SPECIAL_TYPES: [i32; 2] = [3, 4];

struct Model {
    model: LocalModel,
    special: HashSet<u32>,
}

fn load() -> Model {
    let path = std::env::var_os("EDGERAG_CHAT_MODEL")
        .expect("EDGERAG_CHAT_MODEL must name the chat model's GGUF file");
    let open = || BufReader::new(File::open(&path).expect("the chat model opens"));
    let content = Content::read(&mut open()).expect("the chat model is GGUF");
    let Some(Value::Array(types)) = content.metadata.get("tokenizer.ggml.token_type") else {
        panic!("the chat model has no tokenizer.ggml.token_type");
    };
    let special = (0u32..)
        .zip(types)
        .filter(|(_, t)| t.to_i32().is_ok_and(|t| SPECIAL_TYPES.contains(&t)))
        .map(|(id, _)| id)
        .collect();
    let model =
        LocalModel::from_gguf_reader(&mut open(), Weights::AsStored).expect("the chat model loads");
    Model { model, special }
}

thread_local! {
    static MODEL: Model = load();
}

/// The prompt's token ids, as `LocalModel::generate` reads them.
fn prompt_tokens(model: &LocalModel, messages: &[Message]) -> Option<Vec<u32>> {
    model.encode_prompt(messages).ok()
}

// The model loads before the first input (libFuzzer's initialization), so that its loading,
// slow under the sanitizer on a busy machine, never counts against one input's timeout.
fuzz_target!(init: MODEL.with(|_| ()), |data: &[u8]| MODEL.with(|Model { model, special }| {
    // Up to four messages separated by NUL bytes, the last of system, user, assistant, user:
    // the last one is always the user's (the question).
    let parts: Vec<String> =
        data.split(|&b| b == 0).take(4).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    let roles = [Role::System, Role::User, Role::Assistant, Role::User];
    let messages: Vec<Message> = parts
        .iter()
        .zip(&roles[roles.len() - parts.len()..])
        .map(|(content, &role)| Message { role, content: content.clone() })
        .collect();
    let plain: Vec<Message> =
        messages.iter().map(|m| Message { role: m.role, content: "x".to_owned() }).collect();
    let (Some(tokens), Some(expected)) =
        (prompt_tokens(model, &messages), prompt_tokens(model, &plain))
    else {
        return;
    };
    let specials = |tokens: &[u32]| -> Vec<u32> {
        tokens.iter().copied().filter(|id| special.contains(id)).collect()
    };
    assert_eq!(
        specials(&tokens),
        specials(&expected),
        "message content became special tokens: {messages:?}"
    );
}));
