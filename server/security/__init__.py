"""Who may reach Cadre's web layer, and how: the allowed `Host` names and origins
(hosts.py), the request guard of every page route (guard.py: login, CSRF, security
headers), passwords, CSRF tokens and the session key (auth.py), the login routes
(login.py), server-side sessions (sessions.py), the login throttle (throttle.py),
browsers that logged in before (devices.py) and the password asked again before a
risky change (reauth.py). The outside APIs' key check is server/apis/key.py."""
