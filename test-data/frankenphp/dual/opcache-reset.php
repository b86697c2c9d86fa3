<?php
// opcache_reset() while other threads run scripts (Caddy's TestOpcacheReset).
echo opcache_get_status(false)['opcache_enabled'] ?? false ? 'enabled ' : 'disabled ';
echo opcache_reset() ? 'opcache reset done' : 'opcache reset refused';
