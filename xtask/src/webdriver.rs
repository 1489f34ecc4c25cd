//! A minimal W3C WebDriver client over std TCP: chromedriver started on a free port,
//! headless Chromium with a fresh profile, and the handful of commands the end-to-end
//! test needs. Dropping the [`Browser`] ends the session and kills chromedriver.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process with one browser session.
pub(crate) struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile in `profile`.
    pub(crate) fn start(profile: PathBuf, log: PathBuf) -> Result<Browser, String> {
        let port = free_port()?;
        let log = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start /usr/bin/chromedriver: {e}"))?;
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            profile,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while browser.request("GET", "/status", None).is_err() {
            if Instant::now() > deadline {
                return Err("chromedriver did not answer within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            // Both tabs of the concurrency scenario must run at full speed.
            "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "--window-size=1400,1200",
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .chain([format!("--user-data-dir={}", browser.profile.display())])
        .collect::<Vec<_>>();
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": "/usr/bin/chromium", "args": args }
        }}});
        let created = browser.request("POST", "/session", Some(&capabilities))?;
        browser.session = created["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no sessionId in {created}"))?
            .to_owned();
        browser.command(
            "POST",
            "timeouts",
            json!({ "script": 60_000, "pageLoad": 60_000 }),
        )?;
        Ok(browser)
    }

    /// `POST /session/{id}/<path>` (or another method) with a JSON body.
    pub(crate) fn command(&self, method: &str, path: &str, body: Value) -> Result<Value, String> {
        let path = format!("/session/{}/{path}", self.session);
        let body = (method == "POST").then_some(body);
        self.request(method, &path, body.as_ref())
    }

    /// Opens `url` in the current window.
    pub(crate) fn goto(&self, url: &str) -> Result<(), String> {
        self.command("POST", "url", json!({ "url": url })).map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub(crate) fn js(&self, script: &str, args: Value) -> Result<Value, String> {
        self.command(
            "POST",
            "execute/sync",
            json!({ "script": script, "args": args }),
        )
    }

    /// Awaits the promise `script` returns (a function body) and returns its value, or
    /// the error it rejected with as `Err`.
    pub(crate) fn js_async(&self, script: &str, args: Value) -> Result<Value, String> {
        let wrapped = format!(
            "const done = arguments[arguments.length - 1];\n\
             (async () => {{ {script} }}).apply(null, Array.from(arguments).slice(0, -1))\n\
             .then(v => done({{ ok: v === undefined ? null : v }}),\n\
                   e => done({{ err: String(e && e.code ? e.code + ': ' + e.message : e) }}));"
        );
        let out = self.command(
            "POST",
            "execute/async",
            json!({ "script": wrapped, "args": args }),
        )?;
        match out.get("err") {
            Some(err) => Err(format!("script rejected: {err}")),
            None => Ok(out["ok"].clone()),
        }
    }

    /// Polls `expression` (a JS expression) until it is truthy; returns its value.
    pub(crate) fn wait_for(&self, expression: &str, timeout: Duration) -> Result<Value, String> {
        let deadline = Instant::now() + timeout;
        let script = format!("try {{ return ({expression}); }} catch (e) {{ return null; }}");
        loop {
            let value = self.js(&script, json!([]))?;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return Ok(value);
            }
            if Instant::now() > deadline {
                let status = self
                    .js(
                        "const s = document.getElementById('status'); return s ? s.textContent : '';",
                        json!([]),
                    )
                    .unwrap_or_default();
                return Err(format!(
                    "timed out after {timeout:?} waiting for `{expression}` (page status: {status})"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The element matching `css`, waiting up to 10 s for it.
    pub(crate) fn find(&self, css: &str) -> Result<String, String> {
        let expression = format!("document.querySelector({})", json!(css));
        self.wait_for(&expression, Duration::from_secs(10))?;
        let found = self.command(
            "POST",
            "element",
            json!({ "using": "css selector", "value": css }),
        )?;
        found[ELEMENT]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no element for {css}: {found}"))
    }

    /// Clicks the element matching `css`.
    pub(crate) fn click(&self, css: &str) -> Result<(), String> {
        let id = self.find(css)?;
        self.command("POST", &format!("element/{id}/click"), json!({}))
            .map(drop)
    }

    /// Replaces the text of the input matching `css` by typing `text`.
    pub(crate) fn type_into(&self, css: &str, text: &str) -> Result<(), String> {
        let id = self.find(css)?;
        self.command("POST", &format!("element/{id}/clear"), json!({}))?;
        self.command(
            "POST",
            &format!("element/{id}/value"),
            json!({ "text": text }),
        )
        .map(drop)
    }

    /// A PNG of the current window.
    pub(crate) fn screenshot(&self) -> Result<Vec<u8>, String> {
        let data = self.command("GET", "screenshot", json!(null))?;
        base64_decode(data.as_str().ok_or("screenshot is not a string")?)
    }

    /// Opens a new tab and switches to it; returns its handle.
    pub(crate) fn new_tab(&self) -> Result<String, String> {
        let tab = self.command("POST", "window/new", json!({ "type": "tab" }))?;
        let handle = tab["handle"]
            .as_str()
            .ok_or_else(|| format!("no handle in {tab}"))?
            .to_owned();
        self.switch_to(&handle)?;
        Ok(handle)
    }

    /// The handle of the current window.
    pub(crate) fn window(&self) -> Result<String, String> {
        let handle = self.command("GET", "window", json!(null))?;
        handle
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no window handle: {handle}"))
    }

    /// Makes `handle` the current window.
    pub(crate) fn switch_to(&self, handle: &str) -> Result<(), String> {
        self.command("POST", "window", json!({ "handle": handle }))
            .map(drop)
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))
            .map_err(|e| format!("chromedriver: {e}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| e.to_string())?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(|e| format!("chromedriver {method} {path}: {e}"))?;
        let payload =
            read_response(&mut stream).map_err(|e| format!("chromedriver {method} {path}: {e}"))?;
        let value: Value = serde_json::from_slice(&payload).map_err(|e| {
            format!(
                "chromedriver {method} {path}: {e}: {}",
                String::from_utf8_lossy(&payload)
            )
        })?;
        let value = value.get("value").cloned().unwrap_or(Value::Null);
        if let Some(error) = value.get("error").and_then(Value::as_str) {
            let message = value["message"].as_str().unwrap_or("");
            return Err(format!("webdriver {method} {path}: {error}: {message}"));
        }
        Ok(value)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = self.request("DELETE", &path, None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Reads one HTTP response body: by `Content-Length`, chunked, or to the end (chromedriver
/// may keep the connection open, so reading to the end alone would hang).
fn read_response(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let split = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed before the headers ended".into());
        }
        data.extend_from_slice(&buf[..n]);
    };
    let headers = String::from_utf8_lossy(&data[..split]).to_ascii_lowercase();
    let mut body = data.split_off(split + 4);
    let length = headers.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    let chunked = headers.contains("transfer-encoding: chunked");
    loop {
        let complete = match length {
            Some(length) => body.len() >= length,
            None => chunked && body.ends_with(b"0\r\n\r\n"),
        };
        if complete {
            break;
        }
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    if let Some(length) = length {
        body.truncate(length);
    }
    Ok(if chunked { dechunk(&body) } else { body })
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&data[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        let Some(chunk) = data.get(start..start + size) else {
            break;
        };
        out.extend_from_slice(chunk);
        data = data.get(start + size + 2..).unwrap_or(&[]);
    }
    out
}

/// Standard base64 (with padding), as WebDriver's screenshot uses.
pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c).ok_or("invalid base64")? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "tests/webdriver.rs"]
mod tests;
