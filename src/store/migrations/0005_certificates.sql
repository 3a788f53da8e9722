CREATE TABLE `certificates` (
	`id` text PRIMARY KEY NOT NULL,
	`subject` text NOT NULL,
	`names` text NOT NULL,
	`challenge` text NOT NULL,
	`status` text NOT NULL,
	`serial` text,
	`not_before` integer,
	`not_after` integer,
	`renew_at` integer,
	`last_error` text,
	`failures` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `certificates_subject` ON `certificates` (`subject`);--> statement-breakpoint
CREATE INDEX `certificates_due` ON `certificates` (`next_attempt_at`);