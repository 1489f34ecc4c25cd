//! `cargo xtask serve-web`: a tiny std-only static file server for `web/` (the demo page
//! in `web/www/`, the package in `web/pkg/`). Development only: GET and HEAD, one thread
//! per connection, no caching, nothing outside the served directory.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

/// A server bound to a local port, serving `dir`.
pub(crate) struct Server {
    listener: TcpListener,
    dir: PathBuf,
}

impl Server {
    /// Binds `127.0.0.1:port` (0 picks a free port).
    pub(crate) fn bind(dir: PathBuf, port: u16) -> Result<Server, String> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        Ok(Server { listener, dir })
    }

    /// The base URL, e.g. `http://127.0.0.1:8080`.
    pub(crate) fn url(&self) -> String {
        match self.listener.local_addr() {
            Ok(addr) => format!("http://{addr}"),
            Err(_) => "http://127.0.0.1".into(),
        }
    }

    /// Serves forever, one thread per connection.
    pub(crate) fn run(self) {
        for stream in self.listener.incoming().map_while(Result::ok) {
            let dir = self.dir.clone();
            std::thread::spawn(move || {
                let _ = handle(stream, &dir);
            });
        }
    }

    /// Serves from a background thread (the end-to-end test's server).
    pub(crate) fn spawn(self) -> String {
        let url = self.url();
        std::thread::spawn(move || self.run());
        url
    }
}

/// The `Content-Type` of a file, by extension.
pub(crate) fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "ts" => "text/plain; charset=utf-8",
        "md" | "txt" | "jsonl" => "text/plain; charset=utf-8",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// Maps a request target to a file under `dir`; `None` for anything that would leave it.
pub(crate) fn resolve(dir: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path)?;
    let mut file = dir.to_path_buf();
    for component in Path::new(decoded.trim_start_matches('/')).components() {
        match component {
            Component::Normal(part) => file.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    Some(file)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn handle(stream: TcpStream, dir: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Drain the headers; the body of a GET is ignored.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let mut stream = stream;
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET only\n",
            true,
        );
    }
    if target == "/" {
        let head = "HTTP/1.1 302 Found\r\nLocation: /www/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        return stream.write_all(head.as_bytes());
    }
    let body_wanted = method == "GET";
    match resolve(dir, target).map(|file| (std::fs::read(&file), file)) {
        Some((Ok(body), file)) => respond(&mut stream, "200 OK", mime(&file), &body, body_wanted),
        Some((Err(_), _)) => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            body_wanted,
        ),
        None => respond(
            &mut stream,
            "403 Forbidden",
            "text/plain",
            b"forbidden\n",
            body_wanted,
        ),
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    with_body: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if with_body {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
#[path = "tests/serve.rs"]
mod tests;
