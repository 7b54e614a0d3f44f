//! The chat template: the Jinja template a GGUF file carries (`tokenizer.chat_template`),
//! rendered with minijinja as Hugging Face's `apply_chat_template` renders it — `messages`,
//! `add_generation_prompt`, `bos_token`, `eos_token` and `raise_exception` — with ChatML for
//! files without one.

use minijinja::{Environment, ErrorKind, Value, context};

use crate::llm::{Message, Role};
use crate::{Error, Result};

/// ChatML, for models whose file names no template.
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + \
                      message['content'] + '<|im_end|>\\n' }}{% endfor %}\
                      {% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// A compiled chat template.
pub(super) struct ChatTemplate {
    environment: Environment<'static>,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// Compiles `source` (ChatML when `None`); `bos` and `eos` are the texts of the special
    /// tokens the template may use.
    pub(super) fn new(source: Option<&str>, bos: String, eos: String) -> Result<Self> {
        let mut environment = Environment::new();
        environment.add_function("raise_exception", |message: String| -> Result<(), _> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        });
        environment
            .add_template_owned("chat", source.unwrap_or(CHATML).to_owned())
            .map_err(|e| Error::Generation(format!("the chat template does not compile: {e}")))?;
        Ok(Self { environment, bos, eos })
    }

    /// The prompt for `messages`, ending where the assistant's reply begins.
    pub(super) fn render(&self, messages: &[Message]) -> Result<String> {
        let fail = |e: minijinja::Error| Error::Generation(format!("chat template: {e}"));
        let template = self.environment.get_template("chat").map_err(fail)?;
        template
            .render(context! {
                messages => messages.iter().map(message).collect::<Value>(),
                add_generation_prompt => true,
                bos_token => &self.bos,
                eos_token => &self.eos,
            })
            .map_err(fail)
    }
}

/// A message as templates read it: `{"role", "content"}`.
fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    Value::from_pairs([("role", role), ("content", message.content.as_str())])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2-135M-Instruct's template, as its GGUF file carries it.
    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    fn template(source: Option<&str>) -> ChatTemplate {
        ChatTemplate::new(source, "<|im_start|>".into(), "<|im_end|>".into()).unwrap()
    }

    #[test]
    fn renders_the_files_template_with_its_default_system_line() {
        let prompt = template(Some(SMOLLM2)).render(&[Message::user("What is RAG?")]).unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
             Face<|im_end|>\n<|im_start|>user\nWhat is RAG?<|im_end|>\n<|im_start|>assistant\n"
        );
        let prompt = template(Some(SMOLLM2))
            .render(&[Message::system("Be brief."), Message::user("Hi")])
            .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn chatml_without_a_template_and_errors_for_broken_ones() {
        let prompt = template(None).render(&[Message::user("Hi")]).unwrap();
        assert_eq!(prompt, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        let broken = ChatTemplate::new(Some("{% for %}"), String::new(), String::new());
        assert!(matches!(broken, Err(Error::Generation(m)) if m.contains("does not compile")));
        let raising = template(Some("{{ raise_exception('only user messages') }}"));
        let error = raising.render(&[Message::user("Hi")]).unwrap_err().to_string();
        assert!(error.contains("only user messages"), "{error}");
    }
}
