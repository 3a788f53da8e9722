CREATE TABLE `offsite_copies` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`archive_id` text,
	`status` text NOT NULL,
	`sha256` text,
	`bytes` integer,
	`refs` text,
	`made_at` integer NOT NULL,
	`copied_at` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`attempted_at` integer,
	`last_error` text,
	`verified_at` integer,
	`verify_error` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `offsite_copies_key` ON `offsite_copies` (`key`);--> statement-breakpoint
CREATE INDEX `offsite_copies_due` ON `offsite_copies` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `offsite_copies_kind` ON `offsite_copies` (`kind`,`status`,`made_at`);--> statement-breakpoint
CREATE INDEX `offsite_copies_archive` ON `offsite_copies` (`archive_id`);