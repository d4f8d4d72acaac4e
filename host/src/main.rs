//! `ask-user`: binds and serves the host.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:7411").await?;
    axum::serve(listener, ask_user_host::app()).await
}
