use super::{mime, resolve};
use std::path::Path;

#[test]
fn test_wasm_and_js_get_the_mime_types_browsers_require() {
    assert_eq!(mime(Path::new("pkg/spool_web_bg.wasm")), "application/wasm");
    assert_eq!(
        mime(Path::new("www/app.js")),
        "text/javascript; charset=utf-8"
    );
}

#[test]
fn test_requests_cannot_leave_the_served_directory() {
    let dir = Path::new("/srv/web");
    assert_eq!(resolve(dir, "/../secret"), None);
    assert_eq!(resolve(dir, "/www/%2e%2e/%2e%2e/etc/passwd"), None);
    assert_eq!(
        resolve(dir, "/www/app.js?v=1"),
        Some(Path::new("/srv/web/www/app.js").to_path_buf())
    );
}
