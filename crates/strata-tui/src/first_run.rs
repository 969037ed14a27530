//! The first screen when no provider has a key and no model is chosen: it says exactly what
//! to do (each provider's variables, `/login`, the config file) and takes `/login PROVIDER
//! KEY`; once a model can be chosen the session opens.

use std::time::Duration;

use anyhow::Context as _;
use ratatui::crossterm::event::{self, Event};
use strata_host::Setup;

use super::app::{App, Effect, Item};
use super::worker::{Command, Reply};
use super::{TerminalGuard, login, view};

/// Whether strata can start no session: no model chosen and no provider with a key.
pub fn needed(setup: &Setup) -> bool {
    setup.model_choice().is_err() && !super::models::options(setup).iter().any(|m| m.usable)
}

/// Runs the screen until a model can be chosen (the setup to start with) or the user quits.
pub fn run(mut setup: Setup) -> anyhow::Result<Option<Setup>> {
    let mut app = App::new(Some(login::instructions(&setup).join("\n")), Vec::new());
    app.setup_note = Some(
        "no credentials yet: /login PROVIDER KEY, or set a key variable and start again".into(),
    );
    let mut terminal = TerminalGuard::enter()?;
    loop {
        terminal
            .terminal
            .draw(|frame| {
                view::draw(frame, &app, 0);
            })
            .context("drawing the screen")?;
        if event::poll(Duration::from_millis(100)).context("reading the terminal")? {
            match event::read().context("reading the terminal")? {
                Event::Key(key) => app.on_key(key, std::time::Instant::now()),
                Event::Paste(text) => app.on_paste(&text),
                _ => {}
            }
        }
        for effect in app.take_effects() {
            let Effect::Worker(command) = effect else {
                continue;
            };
            match command {
                Command::Login { provider, key } => match login::store(&mut setup, &provider, &key)
                    .and_then(|file| Ok((file, reload(&setup)?)))
                {
                    Ok((_, reloaded)) if reloaded.model_choice().is_ok() => {
                        return Ok(Some(reloaded));
                    }
                    Ok((file, reloaded)) => {
                        setup = reloaded;
                        app.on_reply(Reply::Notice(format!(
                            "stored {provider}'s key in {} (readable by you only). Choose a model to start: strata --model {provider}/ID (strata models lists them), or set `model` in that file",
                            file.display()
                        )));
                    }
                    Err(error) => app.on_reply(Reply::Error(format!("{error:#}"))),
                },
                Command::LoginHelp => app.items.push(Item::Block {
                    title: "login".into(),
                    lines: login::instructions(&setup),
                }),
                _ => app.on_reply(Reply::Error(
                    "no session yet: give strata a key first (/login PROVIDER KEY)".into(),
                )),
            }
            app.on_reply(Reply::Idle);
        }
        if app.quit {
            return Ok(None);
        }
    }
}

/// The setup read again, so that the stored key (and what follows from it) applies.
fn reload(setup: &Setup) -> anyhow::Result<Setup> {
    Setup::load_in(setup.sources.clone(), setup.cwd.clone(), &setup.run)
}
