//! The host's VAPID key pair (RFC 8292): made on first use and kept in the
//! data directory as [`VAPID_KEY_FILE`] (0600, the private scalar in
//! base64url), so subscriptions made against its public key stay valid
//! across restarts. Made the same way as the token file: written to a private
//! file of its own, then hard-linked into place, so two hosts starting at
//! once agree on one key.

use crate::data_dir::{create_private_new, ensure_private_dir, open_private};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use std::io::{self, Read, Write};
use std::path::Path;

/// The key's file name in the data directory.
pub const VAPID_KEY_FILE: &str = "vapid-key";

/// The longest VAPID JWT lifetime push services take (RFC 8292: 24 hours).
pub const MAX_JWT_LIFE_SECS: u64 = 24 * 60 * 60;

/// The host's application-server key pair.
#[derive(Clone)]
pub struct VapidKey {
    signing: SigningKey,
    /// The public key, uncompressed SEC1 in base64url: the page's
    /// `applicationServerKey` and the `k=` of every `Authorization`.
    public: String,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl VapidKey {
    /// A fresh key pair (kept nowhere).
    pub fn generate() -> Self {
        loop {
            let bytes: [u8; 32] = rand::random();
            if let Ok(signing) = SigningKey::from_slice(&bytes) {
                return Self::from_signing(signing);
            }
        }
    }

    fn from_signing(signing: SigningKey) -> Self {
        let public =
            URL_SAFE_NO_PAD.encode(signing.verifying_key().to_encoded_point(false).as_bytes());
        Self { signing, public }
    }

    /// The key kept in `dir`, made first when there is none. Fails, naming
    /// the file, when it cannot be read or holds no valid key.
    pub fn load_or_create(dir: &Path) -> Result<Self, String> {
        ensure_private_dir(dir).map_err(|e| format!("data directory {}: {e}", dir.display()))?;
        let path = dir.join(VAPID_KEY_FILE);
        if let Some(key) = read(&path)? {
            return Ok(key);
        }
        let staged = dir.join(format!(
            ".{VAPID_KEY_FILE}.{}.{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        let fresh = Self::generate();
        let written = (|| -> io::Result<()> {
            let mut file = create_private_new(&staged)?;
            writeln!(file, "{}", URL_SAFE_NO_PAD.encode(fresh.signing.to_bytes()))?;
            file.sync_all()?;
            match std::fs::hard_link(&staged, &path) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
                _ => Ok(()),
            }
        })();
        let _ = std::fs::remove_file(&staged);
        written.map_err(|e| format!("VAPID key file {}: {e}", path.display()))?;
        read(&path)?
            .ok_or_else(|| format!("VAPID key file {}: vanished after creation", path.display()))
    }

    /// The key whose private scalar is `scalar` (base64url), as a shared
    /// record keeps it; `None` when it is not one.
    pub fn from_private(scalar: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(scalar.trim()).ok()?;
        SigningKey::from_slice(&bytes).ok().map(Self::from_signing)
    }

    /// The public key (uncompressed P-256 point, base64url without padding).
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to `audience` (the push
    /// resource's origin, `scheme://host[:port]`), valid until `expires`
    /// (Unix seconds), naming `contact` (`mailto:` or `https:`) as its `sub`
    /// when there is one.
    pub fn authorization(&self, audience: &str, expires: u64, contact: Option<&str>) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let mut claims = serde_json::json!({ "aud": audience, "exp": expires });
        if let Some(contact) = contact {
            claims["sub"] = contact.into();
        }
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let signature: Signature = self.signing.sign(signed.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(signature.to_bytes());
        format!("vapid t={signed}.{signature}, k={}", self.public)
    }
}

fn read(path: &Path) -> Result<Option<VapidKey>, String> {
    let shown = path.display();
    let file = match open_private(path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("VAPID key file {shown}: {e}")),
    };
    let mut text = String::new();
    file.take(256)
        .read_to_string(&mut text)
        .map_err(|e| format!("VAPID key file {shown}: {e}"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim())
        .map_err(|_| format!("VAPID key file {shown}: not base64url; delete it to make a new key (devices then subscribe again)"))?;
    let signing = SigningKey::from_slice(&bytes).map_err(|_| {
        format!("VAPID key file {shown}: not a P-256 private key; delete it to make a new key (devices then subscribe again)")
    })?;
    Ok(Some(VapidKey::from_signing(signing)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;
    use std::path::PathBuf;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ask-user-vapid-{name}-{}-{:x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_key_is_made_once_kept_private_and_read_back_the_same() {
        let dir = temp_dir("kept");
        let first = VapidKey::load_or_create(&dir).unwrap();
        let again = VapidKey::load_or_create(&dir).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(VAPID_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            URL_SAFE_NO_PAD.decode(first.public_key()).unwrap().len(),
            65
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_key_file_is_refused_naming_it() {
        let dir = temp_dir("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(VAPID_KEY_FILE), "not a key!").unwrap();
        let err = VapidKey::load_or_create(&dir).unwrap_err();
        assert!(
            err.contains(VAPID_KEY_FILE) && err.contains("not base64url"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_authorization_carries_a_jwt_signed_by_the_key_it_names() {
        let key = VapidKey::generate();
        let header = key.authorization(
            "https://push.example:8443",
            1_900_000_000,
            Some("mailto:a@b.example"),
        );
        let (t, k) = header
            .strip_prefix("vapid t=")
            .and_then(|rest| rest.split_once(", k="))
            .unwrap();
        assert_eq!(k, key.public_key());
        let (signed, signature) = t.rsplit_once('.').unwrap();
        let claims: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(signed.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["exp"], 1_900_000_000);
        assert_eq!(claims["sub"], "mailto:a@b.example");
        let verifying = VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).unwrap()).unwrap();
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
        verifying.verify(signed.as_bytes(), &signature).unwrap();
        assert!(verifying.verify(b"something else", &signature).is_err());
    }
}
