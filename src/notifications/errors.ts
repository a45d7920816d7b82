/**
 * What can go wrong in the notification domain, independent of HTTP. The
 * route plugins map these to statuses in one place
 * (`notificationErrorHandler` in src/http/routes/notifications.ts); the CLI
 * prints them as JSON.
 */
export class NotificationDomainError extends Error {
  constructor(
    /** Stable machine-readable code, shared by the HTTP body and the CLI output. */
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** No `x-api-key`, a key nobody issued, or a revoked key. */
export class ApiKeyRejectedError extends NotificationDomainError {
  override name = 'ApiKeyRejectedError'
  constructor(reason: 'missing' | 'unknown' | 'revoked') {
    const messages = {
      missing: 'x-api-key header is required',
      unknown: 'x-api-key is not a valid API key',
      revoked: 'x-api-key has been revoked',
    }
    super('unauthorized', messages[reason])
  }
}

/** The key is valid but its project was deleted. */
export class KeyProjectDeletedError extends NotificationDomainError {
  override name = 'KeyProjectDeletedError'
  constructor() {
    super('project_not_found', 'the project of this API key no longer exists')
  }
}

export class AppNotInProjectError extends NotificationDomainError {
  override name = 'AppNotInProjectError'
  constructor(appUrl: string) {
    super('app_not_in_project', `app_url ${appUrl} is not registered in this API key's project`)
  }
}

export class ProjectNotWhitelistedError extends NotificationDomainError {
  override name = 'ProjectNotWhitelistedError'
  constructor() {
    super('project_not_whitelisted', 'this project is not whitelisted for notifications')
  }
}

export class ProjectNotFoundError extends NotificationDomainError {
  override name = 'ProjectNotFoundError'
  constructor(projectId: string) {
    super('not_found', `project ${projectId} does not exist`)
  }
}

export class ApiKeyNotFoundError extends NotificationDomainError {
  override name = 'ApiKeyNotFoundError'
  constructor(keyId: string) {
    super('not_found', `API key ${keyId} does not exist`)
  }
}

export class AppUrlTakenError extends NotificationDomainError {
  override name = 'AppUrlTakenError'
  constructor(appUrl: string) {
    super('app_url_taken', `app_url ${appUrl} already belongs to another project`)
  }
}

/** The delivery queue could not take the job: the send was rolled back. */
export class DeliveryQueueUnavailableError extends NotificationDomainError {
  override name = 'DeliveryQueueUnavailableError'
  constructor(readonly reason: string) {
    super('delivery_queue_unavailable', 'the delivery queue is unreachable; nothing was sent, retry later')
    // logged with the error (pino prints causes), never sent to the client
    this.cause = new Error(reason)
  }
}

/** Reading a wallet's pin and preference failed in the store (not "not pinned"). */
export class PreferencesUnavailableError extends NotificationDomainError {
  override name = 'PreferencesUnavailableError'
  constructor(override readonly cause: unknown) {
    super('preferences_unavailable', 'the status lookup failed in the preferences store; retry later')
  }
}
